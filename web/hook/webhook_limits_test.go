package hook_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

// limitsNoise is n random letters and digits, which PostgreSQL cannot
// compress below its index-row limit.
func limitsNoise(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)[:n]
}

// hubspotChange is one HubSpot contact propertyChange of contact 1.
func hubspotChange(eventID int64, occurred time.Time, property, value string) map[string]any {
	return map[string]any{"eventId": eventID, "subscriptionId": 1, "portalId": 1, "occurredAt": occurred.UnixMilli(),
		"subscriptionType": "contact.propertyChange", "attemptNumber": 0, "objectId": 1,
		"propertyName": property, "propertyValue": value, "changeSource": "CRM_UI"}
}

func hubspotEvents(t *testing.T, events ...map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(events)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWebhookRefusesSalesforceRevisionsFromTheFuture(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	sf := webtest.SfProvider(e, "sf", nil)
	contact := webtest.SfFixture(t, "contact.xml")
	// A message dated 9999-12-31 would make every genuine update stale.
	forged := bytes.ReplaceAll(contact, []byte("04l5e00000ZzYxWAAV"), []byte("04l5e00000ZzYxFAKE"))
	forged = bytes.ReplaceAll(forged, []byte("2026-11-29T10:00:00.000Z"), []byte("9999-12-31T00:00:00.000Z"))
	sf.Acked(forged) // acknowledged, so Salesforce does not retry it
	if got := webtest.SfOutcomes(e, webtest.SfOrg+":04l5e00000ZzYxFAKE"); strings.Join(got, ",") != "rejected" {
		t.Fatalf("forged modstamp: %v, want rejected", got)
	}
	var reason string
	e.Store.Pool().QueryRow(context.Background(), `SELECT reason FROM events WHERE event_id = $1`, webtest.SfOrg+":04l5e00000ZzYxFAKE").Scan(&reason)
	if !strings.Contains(reason, "ahead of the database clock; this provider accepts at most 5m0s") {
		t.Fatalf("reason %q does not name the skew", reason)
	}
	if n := webtest.SfCount(e, `SELECT count(*) FROM records`); n != 0 {
		t.Fatalf("a future revision left %d records", n)
	}
	// The genuine update that follows applies.
	sf.Acked(contact)
	if got := webtest.SfOutcomes(e, webtest.SfOrg+":04l5e00000ZzYxWAAV"); strings.Join(got, ",") != "applied" {
		t.Fatalf("genuine update: %v, want applied", got)
	}
	later := bytes.ReplaceAll(contact, []byte("04l5e00000ZzYxWAAV"), []byte("04l5e00000ZzYxLATE"))
	later = bytes.ReplaceAll(later, []byte("2026-11-29T10:00:00.000Z"), []byte(e.DbNow().UTC().Format("2006-01-02T15:04:05.000Z")))
	sf.Acked(later)
	if got := webtest.SfOutcomes(e, webtest.SfOrg+":04l5e00000ZzYxLATE"); strings.Join(got, ",") != "applied" {
		t.Fatalf("later update: %v, want applied", got)
	}
}

func TestWebhookRefusesHubSpotRevisionsFromTheFuture(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	webtest.HubspotProvider(e, nil)
	now := e.DbNow()
	body := hubspotEvents(t,
		hubspotChange(1, now.Add(10*time.Minute), "jobtitle", "From the future"),
		hubspotChange(2, now.Add(time.Minute), "lifecyclestage", "lead"),
		hubspotChange(3, now.Add(-time.Second), "jobtitle", "Director"))
	status, answer := webtest.HubspotPost(e, body, nil, time.Now())
	results := e.WantResults(status, answer, "rejected", "applied", "applied")
	if reason, _ := results[0]["reason"].(string); !strings.Contains(reason, "ahead of the database clock; this provider accepts at most 5m0s") {
		t.Fatalf("reason %q does not name the skew", reason)
	}
	// With a wider window the provider accepts it.
	if _, err := e.Store.Pool().Exec(context.Background(), `UPDATE providers SET max_future_skew_seconds = 3600 WHERE name = 'hs'`); err != nil {
		t.Fatal(err)
	}
	status, answer = webtest.HubspotPost(e, hubspotEvents(t, hubspotChange(4, now.Add(10*time.Minute), "jobtitle", "VP")), nil, time.Now())
	e.WantResults(status, answer, "applied")
}

func TestWebhookRefusesShippoRevisionsFromTheFuture(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	_, secret := shippoProvider(t, e, "ship", "hmac")
	now := e.DbNow()
	track := func(statusID string, date time.Time) []byte {
		var body map[string]any
		json.Unmarshal(shippoFixture(t, "track_updated_transit"), &body)
		status := body["data"].(map[string]any)["tracking_status"].(map[string]any)
		status["object_id"], status["status_date"] = statusID, date.UTC().Format(time.RFC3339Nano)
		b, _ := json.Marshal(body)
		return b
	}
	res := shippoResult(t, e, "/webhooks/acme/ship", secret, track("ts_future", now.Add(10*time.Minute)))
	if reason, _ := res["reason"].(string); res["outcome"] != "rejected" || !strings.Contains(reason, "ahead of the database clock") {
		t.Fatalf("10 minutes ahead: %v, want rejected naming the skew", res)
	}
	if res := shippoResult(t, e, "/webhooks/acme/ship", secret, track("ts_soon", now.Add(time.Minute))); res["outcome"] != "applied" {
		t.Fatalf("1 minute ahead: %v, want applied", res)
	}
	if _, err := e.Store.Pool().Exec(context.Background(), `UPDATE providers SET max_future_skew_seconds = 3600 WHERE name = 'ship'`); err != nil {
		t.Fatal(err)
	}
	if res := shippoResult(t, e, "/webhooks/acme/ship", secret, track("ts_future", now.Add(10*time.Minute))); res["outcome"] != "applied" {
		t.Fatalf("10 minutes ahead with a 1-hour window: %v, want applied", res)
	}
}

func TestWebhookRejectsWhatPostgreSQLWouldRefuse(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	deep := strings.Repeat(`{"a":`, 69) + `{}` + strings.Repeat(`}`, 69)
	lead := func(email, campaign, domain string) []byte {
		return []byte(fmt.Sprintf(`{"type":"lead.signup","timestamp":"2026-11-29T10:00:00Z","data":{"email":%q,"campaign":%q,"domain":%q}}`,
			email, campaign, domain))
	}
	for _, tc := range []struct {
		name, reason string
		body         []byte
	}{
		{"70-level snapshot", "nests 70 levels deep; at most 64", webtest.SnapshotBody("c-deep", 1, deep)},
		{"10 KB email", "bytes; at most", lead(limitsNoise(10000)+"@example.com", "launch", "")},
		{"3 KB campaign", "campaign is 3000 bytes; at most 255", lead("ada@example.com", limitsNoise(3000), "")},
		{"3 KB domain", "domain is 3000 bytes; at most 253", lead("ada@example.com", "launch", limitsNoise(3000))},
	} {
		status, answer := e.Deliver1("msg_"+strings.ReplaceAll(tc.name, " ", "_"), tc.body)
		results, _ := answer["results"].([]any)
		if status != 200 || len(results) != 1 {
			t.Errorf("%s: answered %d %v, want 200 with one result", tc.name, status, answer)
			continue
		}
		res := results[0].(map[string]any)
		if reason, _ := res["reason"].(string); res["outcome"] != "rejected" || !strings.Contains(reason, tc.reason) {
			t.Errorf("%s: %v, want rejected with a reason containing %q", tc.name, res, tc.reason)
		}
	}
	// The other events of a batch are processed as usual.
	webtest.HubspotProvider(e, nil)
	now := e.DbNow()
	nested := hubspotChange(2, now, "lifecyclestage", "lead")
	nested["extra"] = json.RawMessage(deep)
	status, answer := webtest.HubspotPost(e, hubspotEvents(t,
		hubspotChange(1, now, "jobtitle", "Director"), nested, hubspotChange(3, now, "city", "Paris")), nil, time.Now())
	e.WantResults(status, answer, "applied", "rejected", "applied")
}

// TestWebhookAnswersProgramLimitErrors makes PostgreSQL refuse one event of
// a batch with a program-limit error (class 54), as an index row too large
// would: the delivery is still answered 200, that event rejected.
func TestWebhookAnswersProgramLimitErrors(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	webtest.HubspotProvider(e, nil)
	_, err := e.Store.Pool().Exec(context.Background(), `
CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.object_id = '666' THEN
        RAISE EXCEPTION 'index row size 3016 exceeds btree version 4 maximum 2704' USING ERRCODE = '54000';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER poison BEFORE INSERT ON records FOR EACH ROW EXECUTE FUNCTION poison();`)
	if err != nil {
		t.Fatal(err)
	}
	now := e.DbNow()
	poisoned := hubspotChange(2, now, "jobtitle", "Director")
	poisoned["objectId"] = 666
	status, answer := webtest.HubspotPost(e, hubspotEvents(t,
		hubspotChange(1, now, "jobtitle", "Director"), poisoned, hubspotChange(3, now, "city", "Paris")), nil, time.Now())
	results := e.WantResults(status, answer, "applied", "rejected", "applied")
	if reason, _ := results[1]["reason"].(string); !strings.Contains(reason, "index row size") {
		t.Fatalf("reason %q does not say what PostgreSQL refused", reason)
	}
}
