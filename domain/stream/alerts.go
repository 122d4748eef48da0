package stream

import (
	"strings"

	"github.com/tidemark/tidemark/domain/alerting"
)

// Destinations subscribed to alert types (alert.*, alert.fired,
// alert.resolved) receive the tenant's alert events beside, or instead of,
// its record changes (docs/contract/destinations.md#alerts).

// Destination formats: the body of an alert's message.
const (
	// FormatStandard: {"type", "timestamp", "data"}, like a change's.
	FormatStandard = "standard" // not a provider kind
	// FormatSlack: {"text"}, a Slack-compatible incoming-webhook body. A
	// record change has no such form: a slack destination takes alert
	// types only.
	FormatSlack = "slack"
)

// AlertTypesPattern selects every alert event type.
const AlertTypesPattern = "alert.*"

// A destination's queue holds its alert events beside its changes, at
// positions of their own: alert event e is kept at e + AlertQueueBase,
// below zero, where no change is, and in event order. The attempts of
// both share the destination's attempt log. The statements that fill and
// list the queue take it as a parameter.
const AlertQueueBase int64 = -(1 << 62)

// IsAlertQueuePosition reports whether a queue position holds an alert
// event rather than a change.
func IsAlertQueuePosition(p int64) bool { return p < 0 }

// AlertEventID is the alert event kept at queue position p.
func AlertEventID(p int64) int64 { return p - AlertQueueBase }

// AttemptMessageID is the webhook-id of the message a queue position
// holds: a change's id, or an alert event's.
func AttemptMessageID(tenantID, position int64) string {
	if IsAlertQueuePosition(position) {
		return alerting.Event{TenantID: tenantID, ID: AlertEventID(position)}.MessageID()
	}
	return Change{TenantID: tenantID, Position: position}.ID()
}

func isAlertTypePattern(t string) bool {
	if t == AlertTypesPattern {
		return true
	}
	for _, at := range alerting.EventTypes {
		if at == t {
			return true
		}
	}
	return false
}

// HasAlertTypes reports whether type patterns select alert events.
func HasAlertTypes(types []string) bool {
	for _, t := range types {
		if strings.HasPrefix(t, "alert.") {
			return true
		}
	}
	return false
}

// HasRecordTypes reports whether type patterns select record changes.
func HasRecordTypes(types []string) bool {
	for _, t := range types {
		if strings.HasPrefix(t, "record.") {
			return true
		}
	}
	return false
}
