package pubsub_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/pull/salesforce"
	"github.com/tidemark/tidemark/internal/pull/salesforce/pubsub"
	"github.com/tidemark/tidemark/internal/pull/salesforce/pubsub/pubsubtest"
	"github.com/tidemark/tidemark/internal/pull/salesforce/salesforcetest"
)

const org = "00D5e000000AbCdEAK"

// outboundBody is the outbound message Salesforce sends for the same
// change of contact 0035e00000Q7kLmAAB (SOAP, as internal/provider's
// testdata): Title and Email set, Phone cleared, stamped t0.
const outboundBody = `<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<soapenv:Body><notifications xmlns="http://soap.sforce.com/2005/09/outbound">
<OrganizationId>` + org + `</OrganizationId>
<Notification><Id>04l5e00000ZzYzZAAV</Id>
<sObject xsi:type="sf:Contact" xmlns:sf="urn:sobject.enterprise.soap.sforce.com">
<sf:Id>0035e00000Q7kLmAAB</sf:Id>
<sf:Email>ada@example.com</sf:Email>
<sf:LastName>King</sf:LastName>
<sf:Phone xsi:nil="true"/>
<sf:Title>Countess</sf:Title>
<sf:Birthdate>1990-04-01</sf:Birthdate>
<sf:LastModifiedDate>2026-12-07T09:15:30.250Z</sf:LastModifiedDate>
<sf:SystemModstamp>2026-12-07T09:15:30.250Z</sf:SystemModstamp>
</sObject></Notification></notifications></soapenv:Body></soapenv:Envelope>`

// TestCDCUpdateMatchesTheOutboundMessage: the events of a CDC UPDATE and
// of the outbound message of the same change (stamped in the commit's
// millisecond) name the same record at the same revision with the same
// values, so that whichever comes second is redundant, not a conflict.
func TestCDCUpdateMatchesTheOutboundMessage(t *testing.T) {
	t.Parallel()
	kind, ok := provider.Lookup("salesforce")
	if !ok {
		t.Fatal("no salesforce kind")
	}
	body := []byte(outboundBody)
	received, err := provider.Parse(kind, httptest.NewRequest("POST", "/webhooks/acme/sf", bytes.NewReader(body)), body,
		domain.ProviderEndpoint{Provider: domain.Provider{Kind: "salesforce", Config: map[string]string{"org_id": org, "revision_field": "SystemModstamp"}}})
	if err != nil || len(received) != 1 || received[0].RejectReason != "" {
		t.Fatalf("outbound message: %+v %v", received, err)
	}
	var snapshot map[string]*string
	if err := json.Unmarshal(received[0].Snapshot, &snapshot); err != nil {
		t.Fatal(err)
	}

	ev := roundTrip(t, pubsubtest.Change{Entity: "Contact", Type: "UPDATE", RecordIDs: []string{"0035e00000Q7kLmAAB"}, Commit: t0,
		Fields: map[string]any{"Email": "ada@example.com", "Name.LastName": "King", "Title": "Countess",
			"Birthdate": int32(7395), "LastModifiedDate": t0.UnixMilli()},
		Nulled: []string{"Phone"}})[0]
	events, _ := pubsub.Events(ev)
	if len(events) != 6 {
		t.Fatalf("%d events, want one per changed field (6)", len(events))
	}
	for _, e := range events {
		if e.Scope.ObjectType != received[0].Scope.ObjectType || e.ObjectID != received[0].ObjectID || *e.Revision != *received[0].Revision {
			t.Fatalf("CDC %s %s at %d, outbound %s %s at %d", e.Scope.ObjectType, e.ObjectID, *e.Revision,
				received[0].Scope.ObjectType, received[0].ObjectID, *received[0].Revision)
		}
		var change map[string]*string
		if err := json.Unmarshal(e.Snapshot, &change); err != nil {
			t.Fatal(err)
		}
		cdc, outbound := change[e.Property], snapshot[e.Property]
		if (cdc == nil) != (outbound == nil) || (cdc != nil && *cdc != *outbound) {
			t.Fatalf("%s: CDC %v, outbound %v", e.Property, deref(cdc), deref(outbound))
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestSourceTokenSignsInWithTheConnectedApp: the Pub/Sub API is called
// with the backfill's client-credentials token, and a refused token is
// renewed after Forget.
func TestSourceTokenSignsInWithTheConnectedApp(t *testing.T) {
	t.Parallel()
	sf := salesforcetest.New(t)
	src, err := salesforce.New(sf.Credentials(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	token, instance, err := src.Session(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	fake := pubsubtest.New(t, 0)
	fake.Accept(token, instance, org)
	c, err := pubsub.Dial(t.Context(), pubsub.Config{Address: fake.Addr(), AllowPrivate: true,
		Token: pubsub.SourceToken(src, org)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.GetTopic(t.Context(), "/data/ChangeEvents"); err != nil {
		t.Fatalf("GetTopic with the connected app's token: %v", err)
	}

	fake.Accept("a token Salesforce issued later", instance, org)
	if _, err := c.GetTopic(t.Context(), "/data/ChangeEvents"); !errors.Is(err, pubsub.ErrAuthentication) {
		t.Fatalf("GetTopic with a refused token: %v", err)
	}
	src.Forget(token)
	renewed, _, err := src.Session(t.Context())
	if err != nil || renewed == token || len(sf.Tokens()) != 2 {
		t.Fatalf("after Forget: token %q (was %q), %d sign-ins, %v; want a new sign-in", renewed, token, len(sf.Tokens()), err)
	}
	fake.Accept(renewed, instance, org)
	if _, err := c.GetTopic(t.Context(), "/data/ChangeEvents"); err != nil {
		t.Fatalf("GetTopic with the renewed token: %v", err)
	}
}
