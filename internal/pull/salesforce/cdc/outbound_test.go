package cdc_test

import (
	"bytes"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/pull/salesforce/pubsub/pubsubtest"
)

// outbound is the outbound message Salesforce sends for a change of
// contact id stamped at (SOAP, as internal/provider's testdata): the
// fields an outbound message carries, selected in its workflow rule.
func outbound(id string, at time.Time, email, title string) []byte {
	stamp := at.UTC().Format("2006-01-02T15:04:05.000Z")
	return []byte(`<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<soapenv:Body><notifications xmlns="http://soap.sforce.com/2005/09/outbound">
<OrganizationId>` + org + `</OrganizationId>
<Notification><Id>04l5e00000Z` + stamp[14:16] + stamp[17:19] + `AAV</Id>
<sObject xsi:type="sf:Contact" xmlns:sf="urn:sobject.enterprise.soap.sforce.com">
<sf:Id>` + id + `</sf:Id>
<sf:Email>` + email + `</sf:Email>
<sf:Title>` + title + `</sf:Title>
<sf:SystemModstamp>` + stamp + `</sf:SystemModstamp>
</sObject></Notification></notifications></soapenv:Body></soapenv:Envelope>`)
}

// deliverOutbound ingests an outbound message as the provider's URL does
// and returns its events' outcomes.
func (f fixture) deliverOutbound(t *testing.T, body []byte) []domain.Outcome {
	t.Helper()
	kind, _ := provider.Lookup("salesforce")
	events, err := provider.Parse(kind, httptest.NewRequest("POST", "/webhooks/acme/sf", bytes.NewReader(body)), body, f.p)
	if err != nil {
		t.Fatal(err)
	}
	for i := range events {
		events[i].Seq = i
	}
	results, err := f.store.Ingest(f.ctx, domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: f.p.TenantID, ProviderID: f.p.ID,
		ReceivedAt: time.Now(), Status: 200, Signature: domain.SignatureValid, Body: body}, f.p, events)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []domain.Outcome
	for _, r := range results {
		outcomes = append(outcomes, r.Outcome)
	}
	return outcomes
}

// TestOutboundMessagesAndCDCAgree: the same changes brought by an outbound
// message and by Change Data Capture, in either order, are applied once:
// whichever comes second is redundant, never a revision conflict, for a
// record created by either; a change only one of them brought applies.
func TestOutboundMessagesAndCDCAgree(t *testing.T) {
	t.Parallel()
	f := setup(t)
	run(t, f.subscriber(t, time.Minute))
	f.awaitSubscribed(t, 1)

	// Created by CDC, then the outbound message of the creation.
	f.awaitReplay(t, f.pubsub.AddChange(pubsubtest.Change{Entity: "Contact", Type: "CREATE", RecordIDs: []string{"003A"}, Commit: t0,
		Fields: map[string]any{"Email": "ada@example.com", "Title": "Countess", "Name.LastName": "King"}}), "CDC's create")
	if got := f.deliverOutbound(t, outbound("003A", t0, "ada@example.com", "Countess")); len(got) != 1 || got[0] != domain.Redundant {
		t.Fatalf("the outbound message of a change CDC brought: %v, want redundant", got)
	}
	// The outbound message first, then CDC's update of the same change.
	t1 := t0.Add(time.Minute)
	if got := f.deliverOutbound(t, outbound("003A", t1, "ada@example.com", "Duchess")); len(got) != 1 || got[0] != domain.Applied {
		t.Fatalf("a newer outbound message: %v, want applied", got)
	}
	f.awaitReplay(t, f.pubsub.AddChange(pubsubtest.Change{Entity: "Contact", Type: "UPDATE", RecordIDs: []string{"003A"}, Commit: t1,
		Fields: map[string]any{"Title": "Duchess"}}), "CDC's update")
	// A change the outbound messages missed.
	t2 := t0.Add(2 * time.Minute)
	f.awaitReplay(t, f.pubsub.AddChange(pubsubtest.Change{Entity: "Contact", Type: "UPDATE", RecordIDs: []string{"003A"}, Commit: t2,
		Fields: map[string]any{"Phone": "555-0100"}}), "CDC's missed update")

	got := f.outcomes(t)
	if got["revision_conflict"] != 0 || got["stale"] != 0 {
		t.Fatalf("outcomes %v, want no conflict and nothing stale", got)
	}
	var cdcRedundant int
	if err := f.store.Pool().QueryRow(f.ctx, `SELECT count(*) FROM events e JOIN deliveries d ON d.tenant_id = e.tenant_id
		AND d.id = e.delivery_id WHERE e.tenant_id = $1 AND d.source = 'cdc' AND e.property = 'Title' AND e.outcome = 'redundant'`,
		f.p.TenantID).Scan(&cdcRedundant); err != nil || cdcRedundant != 1 {
		t.Fatalf("%d of CDC's Title changes redundant (%v), want the one the outbound message brought first", cdcRedundant, err)
	}
	snap, _ := f.record(t, "contact", "003A")
	for _, want := range []string{`"Title": "Duchess"`, `"Phone": "555-0100"`, `"Email": "ada@example.com"`} {
		if !bytes.Contains([]byte(snap), []byte(want)) {
			t.Errorf("record %s lacks %s", snap, want)
		}
	}
}
