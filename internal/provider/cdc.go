package provider

// changeDataCapturer is implemented by kinds whose providers can subscribe
// to their org's change events (docs/contract/cdc.md).
type changeDataCapturer interface {
	ChangeDataCapture() bool
}

// ChangeDataCapture: Salesforce's Pub/Sub API, with the connected app's
// credentials that backfill uses.
func (salesforce) ChangeDataCapture() bool { return true }

// ChangeDataCapture reports whether providers of kind can subscribe to
// Change Data Capture; false for a kind this build does not know.
func ChangeDataCapture(kind string) bool {
	c, ok := registry[kind].(changeDataCapturer)
	return ok && c.ChangeDataCapture()
}
