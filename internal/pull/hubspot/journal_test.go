package hubspot

// The fake's journal (hubspottest/journal.go, snapshots.go) follows the spec
// PublicApiSpecs/Webhooks Journal/Webhooks Journal/Rollouts/284944/2026-03/webhooksJournal.json
// of HubSpot/HubSpot-public-api-spec-collection (JournalFetchResponse,
// BatchResponseJournalFetchResponse, SubscriptionUpsertRequest and
// SubscriptionResponse, CrmObjectSnapshotBatchRequest/Response,
// SnapshotStatusResponse) and the guide
// https://developers.hubspot.com/docs/api-reference/latest/webhooks-journal/journal-entries/guide.md
// (the url of an entry's data). [unverified] The data's format is not in
// either: it follows providers-4.md and the webhooks v3 payload.

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/pull/hubspot/hubspottest"
)

func strp(s string) *string { return &s }

func TestJournalEarliestNextEntries(t *testing.T) {
	api, c := appSetup(t)
	ctx := context.Background()
	j := c.Journal(c.AppTokens("developer.webhooks_journal.read"), 31)
	if _, err := j.Earliest(ctx); !errors.Is(err, ErrJournalEmpty) {
		t.Fatalf("earliest of an empty journal: %v; want ErrJournalEmpty", err)
	}
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	first := api.AppendEntry(31, hubspottest.Entry{ObjectTypeID: "0-1", ObjectID: 5, Action: "CREATE", OccurredAt: at.UnixMilli(),
		Properties: map[string]*string{"email": strp("a@example.com")}})
	api.AppendEntry(31, hubspottest.Entry{ObjectTypeID: "0-1", ObjectID: 5, Action: "UPDATE", OccurredAt: at.Add(time.Second).UnixMilli(),
		ChangeSource: "CRM_UI", Properties: map[string]*string{"firstname": nil}})
	last := api.AppendEntry(31, hubspottest.Entry{ObjectTypeID: "0-1", ObjectID: 5, Action: "MERGE", OccurredAt: at.Add(2 * time.Second).UnixMilli(),
		PrimaryObjectID: 5, MergedObjectIDs: []int64{6}})
	api.AppendEntry(32, hubspottest.Entry{ObjectTypeID: "0-2", ObjectID: 9, Action: "GDPR_DELETE", OccurredAt: at.UnixMilli()})

	p, err := j.Earliest(ctx)
	if err != nil || p.Offset != first || p.URL == "" || p.ExpiresAt.IsZero() {
		t.Fatalf("earliest %+v, %v", p, err)
	}
	if p, err := j.Latest(ctx); err != nil || p.Offset != last {
		t.Fatalf("latest %+v, %v", p, err)
	}
	pages, err := j.Next(ctx, first, 10)
	if err != nil || len(pages) != 2 || pages[1].Offset != last {
		t.Fatalf("next %+v, %v", pages, err)
	}
	var got []JournalEntry
	for _, p := range append([]JournalPage{p}, pages...) {
		entries, err := j.Entries(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, entries...)
	}
	if len(got) != 3 {
		t.Fatalf("entries %+v", got)
	}
	e := got[0]
	if e.Offset != first || e.PortalID != 31 || e.AppID != api.App().ID || e.Action != ActionCreate || e.ObjectTypeID != "0-1" ||
		e.ObjectID != 5 || !e.OccurredAt.Equal(at) || *e.Properties["email"] != "a@example.com" || e.EventID == "" {
		t.Fatalf("create entry %+v", e)
	}
	if v, ok := got[1].Properties["firstname"]; !ok || v != nil || got[1].ChangeSource != "CRM_UI" {
		t.Fatalf("update entry %+v", got[1])
	}
	if got[2].Action != ActionMerge || got[2].PrimaryObjectID != 5 || len(got[2].MergedObjectIDs) != 1 {
		t.Fatalf("merge entry %+v", got[2])
	}
	if pages, err := j.Next(ctx, last, 10); err != nil || len(pages) != 0 {
		t.Fatalf("next after the latest: %+v, %v; want none", pages, err)
	}
	// The journal keeps 3 days: an offset it dropped is a 404.
	api.Expire(31, 1)
	if _, err := j.Next(ctx, first, 10); !errors.Is(err, ErrOffsetExpired) {
		t.Fatalf("next from a dropped offset: %v; want ErrOffsetExpired", err)
	}
}

// The signed URL carries its own authority: no bearer token is sent (the
// fake refuses one, as S3 does), a changed signature or an expired URL is
// refused, and the URL never appears in the error.
func TestJournalEntriesSignedURL(t *testing.T) {
	api, c := appSetup(t)
	ctx := context.Background()
	j := c.Journal(c.AppTokens("developer.webhooks_journal.read"), 31)
	api.AppendEntry(31, hubspottest.Entry{ObjectTypeID: "0-3", ObjectID: 1, Action: "DELETE", OccurredAt: time.Now().UnixMilli()})
	p, err := j.Earliest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tampered := p
	tampered.URL = strings.Replace(p.URL, "X-Amz-Signature=", "X-Amz-Signature=0", 1)
	if _, err := j.Entries(ctx, tampered); err == nil || strings.Contains(err.Error(), "X-Amz-Signature") {
		t.Fatalf("tampered URL: %v; want a refusal without the URL", err)
	}
	api.SetFileURLLife(-time.Minute)
	expired, _ := j.Earliest(ctx)
	if _, err := j.Entries(ctx, expired); err == nil {
		t.Fatal("an expired signed URL was read")
	}
	if entries, err := j.Entries(ctx, p); err != nil || len(entries) != 1 || entries[0].Action != ActionDelete {
		t.Fatalf("entries %+v, %v", entries, err)
	}
}

func TestParseJournalEntriesForms(t *testing.T) {
	obj := `{"offset":"o1","portalId":1,"objectTypeId":"0-1","objectId":2,"action":"UPDATE","occurredAt":1700000000000}`
	for name, data := range map[string]string{"object": obj, "array": "[" + obj + "," + obj + "]", "lines": obj + "\n" + obj + "\n"} {
		got, err := ParseJournalEntries([]byte(data))
		if err != nil || len(got) == 0 || got[0].OccurredAt.UnixMilli() != 1700000000000 {
			t.Errorf("%s: %+v, %v", name, got, err)
		}
	}
	if _, err := ParseJournalEntries([]byte(`{"objectId":2}`)); err == nil {
		t.Error("an entry without action or occurredAt was accepted")
	}
}

// https://developers.hubspot.com/docs/api-reference/latest/webhooks-journal/subscriptions/create-subscription
func TestSubscriptions(t *testing.T) {
	_, c := appSetup(t)
	ctx := context.Background()
	ts := c.AppTokens("developer.webhooks_journal.subscriptions.read", "developer.webhooks_journal.subscriptions.write")
	created, err := c.CreateSubscription(ctx, ts, SubscriptionRequest{SubscriptionType: "OBJECT", PortalID: 31, ObjectTypeID: "0-1",
		Actions: []string{ActionCreate, ActionUpdate, ActionDelete, ActionMerge, ActionRestore}, Properties: []string{"email"}})
	if err != nil || created.ID == 0 || created.AppID == 0 || created.CreatedAt.IsZero() {
		t.Fatalf("created %+v, %v", created, err)
	}
	if _, err := c.CreateSubscription(ctx, ts, SubscriptionRequest{SubscriptionType: "GDPR_PRIVACY_DELETION", PortalID: 31,
		ObjectTypeID: "0-1", Actions: []string{ActionGDPRDelete}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateSubscription(ctx, ts, SubscriptionRequest{SubscriptionType: "OBJECT", PortalID: 31, ObjectTypeID: "0-1",
		Actions: []string{"RENAME"}}); statusOf(err) != 400 {
		t.Fatalf("unknown action: %v; want a 400", err)
	}
	list, err := c.Subscriptions(ctx, ts)
	if err != nil || len(list) != 2 || list[0].Actions[3] != ActionMerge {
		t.Fatalf("list %+v, %v", list, err)
	}
	if err := c.DeleteSubscription(ctx, ts, created.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.DeletePortalSubscriptions(ctx, ts, 31); err != nil {
		t.Fatal(err)
	}
	if list, err := c.Subscriptions(ctx, ts); err != nil || len(list) != 0 {
		t.Fatalf("after deletes %+v, %v", list, err)
	}
}

// https://developers.hubspot.com/docs/api-reference/latest/webhooks-journal/snapshots/guide.md
func TestSnapshotLandsInJournal(t *testing.T) {
	api, c := appSetup(t)
	ctx := context.Background()
	id := api.Create("contact", time.Now().Add(-time.Hour), map[string]string{"email": "s@example.com"})
	ts := c.AppTokens("developer.webhooks_journal.snapshots.write", "developer.webhooks_journal.read")
	accepted, err := c.RequestSnapshots(ctx, ts, []SnapshotRequest{{PortalID: 31, ObjectTypeID: "0-1", ObjectID: atoi(t, id), Properties: []string{"email"}}})
	if err != nil || len(accepted) != 1 || accepted[0].StatusID == "" {
		t.Fatalf("accepted %+v, %v", accepted, err)
	}
	status, err := c.WaitSnapshot(ctx, ts, accepted[0].StatusID, 10*time.Millisecond)
	if err != nil || !status.Succeeded() || status.CompletedAt.IsZero() {
		t.Fatalf("status %+v, %v", status, err)
	}
	j := c.Journal(ts, 31)
	p, err := j.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := j.Entries(ctx, p)
	if err != nil || len(entries) != 1 || entries[0].Action != ActionSnapshot || *entries[0].Properties["email"] != "s@example.com" {
		t.Fatalf("snapshot entry %+v, %v", entries, err)
	}
}

func TestJournalWaitsRetryAfter(t *testing.T) {
	api, c := appSetup(t)
	ts := c.AppTokens("developer.webhooks_journal.read")
	if _, err := ts.AccessToken(context.Background()); err != nil {
		t.Fatal(err)
	}
	api.AppendEntry(31, hubspottest.Entry{ObjectTypeID: "0-1", ObjectID: 1, Action: "CREATE", OccurredAt: time.Now().UnixMilli()})
	api.TooManyRequestsOnce(time.Second)
	start := time.Now()
	if _, err := c.Journal(ts, 31).Earliest(context.Background()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("took %s; Retry-After asked for 1 s", took)
	}
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// An app's batch holds several portals' events, signed v3 with the app's
// client secret (https://developers.hubspot.com/docs/api/webhooks/validating-requests).
func TestAppBatchSigned(t *testing.T) {
	api, _ := appSetup(t)
	const uri = "https://tidemark.example/webhooks/apps/crm"
	at := time.Now()
	body, h := api.AppBatch(uri, at,
		hubspottest.V3Event{EventID: 1, PortalID: 31, SubscriptionType: "contact.propertyChange", ObjectID: 5, PropertyName: "email", PropertyValue: "", OccurredAt: at},
		hubspottest.V3Event{EventID: 2, PortalID: 32, SubscriptionType: "contact.creation", ObjectID: 6, OccurredAt: at})
	want := provider.SignHubSpotV3(api.App().ClientSecret, "POST", uri, body, h.Get("X-HubSpot-Request-Timestamp"))
	if h.Get("X-HubSpot-Signature-v3") != want {
		t.Fatal("the batch is not signed with the app's client secret")
	}
	var events []map[string]any
	if err := json.Unmarshal(body, &events); err != nil || len(events) != 2 {
		t.Fatalf("batch %s: %v", body, err)
	}
	if events[0]["portalId"] != float64(31) || events[1]["portalId"] != float64(32) || events[0]["appId"] != float64(api.App().ID) {
		t.Fatalf("batch %s", body)
	}
	if v, ok := events[0]["propertyValue"]; !ok || v != "" {
		t.Fatalf("a cleared propertyValue is left out: %s", body)
	}
}
