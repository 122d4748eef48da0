package salesforce

// A pulled record must be the event the outbound message parser makes of
// the same record, so that one received by webhook is redundant. The text
// forms compared: the REST API's JSON (Query:
// https://developer.salesforce.com/docs/atlas.en-us.api_rest.meta/api_rest/dome_query.htm)
// against an outbound message's SOAP values (the outbound messaging WSDL:
// https://developer.salesforce.com/docs/atlas.en-us.api.meta/api/sforce_api_om_outboundmessaging_wsdl.htm,
// and the primitive types:
// https://developer.salesforce.com/docs/atlas.en-us.object_reference.meta/object_reference/primitive_data_types.htm).

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
)

const org = "00D5e000000AbCdEAK"

// parseOutbound parses an outbound message as the receiver does, for a
// provider of org with config.
func parseOutbound(t *testing.T, body []byte, config map[string]string) []domain.Event {
	t.Helper()
	kind, ok := provider.Lookup("salesforce")
	if !ok {
		t.Fatal("no salesforce kind")
	}
	cfg := map[string]string{"org_id": org}
	for k, v := range config {
		cfg[k] = v
	}
	events, err := kind.Parse(httptest.NewRequest("POST", "/webhooks/acme/sf", bytes.NewReader(body)), body,
		domain.ProviderEndpoint{Provider: domain.Provider{Kind: "salesforce", Config: cfg}})
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func fixtureBody(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "provider", "testdata", "salesforce", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// outboundMessage is a one-notification outbound message for an sObject of
// typ with fields, in order; a nil value is xsi:nil.
func outboundMessage(typ string, fields [][2]*string) []byte {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">`)
	b.WriteString(`<soapenv:Body><notifications xmlns="http://soap.sforce.com/2005/09/outbound"><OrganizationId>` + org + `</OrganizationId>`)
	b.WriteString(`<Notification><Id>04l5e00000ZzYzZAAV</Id><sObject xsi:type="sf:` + typ + `" xmlns:sf="urn:sobject.enterprise.soap.sforce.com">`)
	for _, f := range fields {
		if f[1] == nil {
			b.WriteString(`<sf:` + *f[0] + ` xsi:nil="true"/>`)
			continue
		}
		b.WriteString(`<sf:` + *f[0] + `>`)
		xml.EscapeText(&b, []byte(*f[1]))
		b.WriteString(`</sf:` + *f[0] + `>`)
	}
	b.WriteString(`</sObject></Notification></notifications></soapenv:Body></soapenv:Envelope>`)
	return b.Bytes()
}

func p(s string) *string { return &s }

// sameEvent fails unless pulled says of the record what received says.
func sameEvent(t *testing.T, pulled, received domain.Event) {
	t.Helper()
	if received.RejectReason != "" || pulled.RejectReason != "" {
		t.Fatalf("rejected: received %q, pulled %q", received.RejectReason, pulled.RejectReason)
	}
	if pulled.Scope != received.Scope || pulled.ObjectID != received.ObjectID || pulled.Timestamp != received.Timestamp {
		t.Errorf("pulled %v %s at %s, received %v %s at %s", pulled.Scope, pulled.ObjectID, pulled.Timestamp,
			received.Scope, received.ObjectID, received.Timestamp)
	}
	if !bytes.Equal(pulled.Snapshot, received.Snapshot) {
		t.Errorf("snapshots differ:\npulled   %s\nreceived %s", pulled.Snapshot, received.Snapshot)
	}
	if (pulled.Revision == nil) != (received.Revision == nil) ||
		(pulled.Revision != nil && *pulled.Revision != *received.Revision) || !pulled.RevisionTime.Equal(received.RevisionTime) {
		t.Errorf("revisions differ: pulled %v at %s, received %v at %s", deref(pulled.Revision), pulled.RevisionTime,
			deref(received.Revision), received.RevisionTime)
	}
}

func deref(r *int64) int64 {
	if r == nil {
		return -1
	}
	return *r
}

func TestPulledRecordsEqualTheOutboundParsersEvents(t *testing.T) {
	t.Parallel()
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, tc := range []struct {
		name     string
		body     []byte
		config   map[string]string
		typ      string // API name
		modstamp time.Time
		opts     []Option
		rest     map[string]any // the record's other fields as the REST API writes them
	}{
		{name: "contact.xml", body: fixtureBody(t, "contact.xml"), typ: "Contact", modstamp: at("2026-11-29T10:00:00.000Z"),
			opts: []Option{WithFields("contact", "Email", "FirstName", "LastName", "MobilePhone")},
			rest: map[string]any{"Email": "ada@example.com", "FirstName": "Ada", "LastName": "Lovelace & Co", "MobilePhone": nil}},
		{name: "batch.xml account", body: fixtureBody(t, "batch.xml"), typ: "Account", modstamp: at("2026-11-29T09:15:30.250Z"),
			opts: []Option{WithFields("account", "Industry", "Name", "NumberOfEmployees")},
			rest: map[string]any{"Industry": "Manufacturing", "Name": "Analytical Engines Ltd", "NumberOfEmployees": json.Number("42")}},
		{name: "typed values", typ: "Contact", modstamp: at("2026-11-29T11:00:00.125Z"),
			body: outboundMessage("Contact", [][2]*string{
				{p("Id"), p("0035e00000Q7kLpAAB")}, {p("AnnualSpend__c"), p("1500000.5")}, {p("Birthdate"), p("1815-12-10")},
				{p("DoNotCall"), p("true")}, {p("HasOptedOutOfEmail"), p("false")}, {p("Last_Seen__c"), p("2026-11-28T23:59:59.999Z")},
				{p("LastName"), p("Lovelace — Ada <ada>")}, {p("NumberOfVisits__c"), p("7")}, {p("Opens_At__c"), p("09:30:00.000Z")},
				{p("Title"), nil}, {p("SystemModstamp"), p("2026-11-29T11:00:00.125Z")}}),
			opts: []Option{WithFields("contact", "AnnualSpend__c", "Birthdate", "DoNotCall", "HasOptedOutOfEmail", "Last_Seen__c",
				"LastName", "NumberOfVisits__c", "Opens_At__c", "Title")},
			rest: map[string]any{"AnnualSpend__c": json.Number("1500000.5"), "Birthdate": "1815-12-10", "DoNotCall": true,
				"HasOptedOutOfEmail": false, "Last_Seen__c": at("2026-11-28T23:59:59.999Z"), "LastName": "Lovelace — Ada <ada>",
				"NumberOfVisits__c": json.Number("7"), "Opens_At__c": "09:30:00.000Z", "Title": nil}},
		{name: "another revision field", typ: "Account", modstamp: at("2026-11-29T12:00:05.000Z"),
			config: map[string]string{"revision_field": "LastModifiedDate"},
			body: outboundMessage("Account", [][2]*string{{p("Id"), p("0015e00000AbCdFAAZ")},
				{p("LastModifiedDate"), p("2026-11-29T12:00:00.000Z")}, {p("Name"), p("Difference Works")}}),
			opts: []Option{WithRevisionField("LastModifiedDate"), WithFields("account", "Name")},
			rest: map[string]any{"LastModifiedDate": at("2026-11-29T12:00:00.000Z"), "Name": "Difference Works"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var received *domain.Event
			for _, e := range parseOutbound(t, tc.body, tc.config) {
				if e.Scope.ObjectType == strings.ToLower(tc.typ) {
					received = &e
				}
			}
			if received == nil {
				t.Fatalf("the message has no %s", tc.typ)
			}
			f := setup(t, tc.opts...)
			f.org.Put(tc.typ, received.ObjectID, tc.modstamp, tc.rest)
			pages, err := f.pullAll(t, strings.ToLower(tc.typ), tc.modstamp.Add(-time.Minute), tc.modstamp.Add(time.Minute))
			if err != nil || len(pages) != 1 || len(pages[0]) != 1 {
				t.Fatalf("pull: %v %v", pages, err)
			}
			sameEvent(t, pages[0][0], *received)
			if want := "backfill:" + strings.ToLower(tc.typ) + ":" + received.ObjectID + ":"; !strings.HasPrefix(pages[0][0].EventID, want) {
				t.Errorf("event id %s, want %s<revision>", pages[0][0].EventID, want)
			}
		})
	}
}

// Without the fields the outbound messages carry, a pulled snapshot holds
// Id and the revision field alone: not the webhook's snapshot.
func TestDefaultSnapshotIsIdAndRevisionField(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.org.Put("Contact", "003A", base, map[string]any{"Email": "ada@example.com"})
	pages, err := f.pullAll(t, "contact", base, base.Add(time.Minute))
	if err != nil || len(pages) != 1 {
		t.Fatalf("pull: %v %v", pages, err)
	}
	e := pages[0][0]
	if string(e.Snapshot) != `{"Id":"003A","SystemModstamp":"2026-11-29T09:00:00.000Z"}` {
		t.Fatalf("snapshot %s, want Id and SystemModstamp", e.Snapshot)
	}
	if !strings.Contains(string(e.Payload), `"attributes":{"type":"Contact"}`) || strings.Contains(string(e.Payload), "/sobjects/") {
		t.Fatalf("payload %s, want the record with its type and without its URL", e.Payload)
	}
}

// A compound or related value cannot be an outbound message field: the
// event is rejected with a reason, as the parser rejects nested elements.
func TestNestedValuesAreRejected(t *testing.T) {
	t.Parallel()
	for raw, flat := range map[string]bool{`{"city":"London"}`: false, `[1]`: false, `"x"`: true, `null`: true, `1.0E7`: true} {
		v, ok := outboundValue(json.RawMessage(raw))
		if ok != flat {
			t.Errorf("outboundValue(%s) = %v, %v; want flat %v", raw, v, ok, flat)
		}
	}
	if v, _ := outboundValue(json.RawMessage(`1.0E7`)); v != "1.0E7" {
		t.Errorf("a number's text: %v, want 1.0E7 as Salesforce wrote it", v)
	}
	e, err := newReader("contact", "SystemModstamp", []string{"MailingAddress"}).record(json.RawMessage(
		`{"attributes":{"type":"Contact"},"Id":"003A","SystemModstamp":"2026-11-29T09:00:00.000+0000","MailingAddress":{"city":"London"}}`))
	if err != nil || !strings.Contains(e.e.RejectReason, "MailingAddress is a compound or related value") {
		t.Fatalf("record = %+v, %v; want it rejected naming MailingAddress", e.e, err)
	}
}
