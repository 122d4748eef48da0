package web_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const sfOrg = "00D5e000000AbCdEAK"

// sfAck is the exact acknowledgement Salesforce waits for.
const sfAck = `<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/">
 <soapenv:Body>
  <notificationsResponse xmlns="http://soap.sforce.com/2005/09/outbound">
   <Ack>true</Ack>
  </notificationsResponse>
 </soapenv:Body>
</soapenv:Envelope>
`

func sfFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("provider", "testdata", "salesforce", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sfProvider creates tenant acme (if needed) and a salesforce provider.
func (e *env) sfProvider(name string, config map[string]string) {
	e.t.Helper()
	if config == nil {
		config = map[string]string{"org_id": sfOrg, "revision_field": "SystemModstamp"}
	}
	if _, err := e.store.ConnectProvider(context.Background(), e.tenant("acme").ID, name, "salesforce", "", config); err != nil {
		e.t.Fatal(err)
	}
}

// sfPost posts a SOAP body and returns the status, body and Content-Type.
func (e *env) sfPost(provider string, body []byte) (int, string, string) {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/webhooks/acme/"+provider, bytes.NewReader(body))
	req.Header.Set("Content-Type", "text/xml; charset=utf-8")
	req.Header.Set("SOAPAction", `""`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw), resp.Header.Get("Content-Type")
}

// sfAcked posts body and fails unless the answer is the exact ack.
func (e *env) sfAcked(provider string, body []byte) {
	e.t.Helper()
	status, answer, ctype := e.sfPost(provider, body)
	if status != http.StatusOK || answer != sfAck || ctype != "text/xml; charset=utf-8" {
		e.t.Fatalf("answer %d %q %q, want 200 with the exact ack", status, ctype, answer)
	}
}

// sfOutcomes lists the outcomes of every event with this id, oldest first.
func (e *env) sfOutcomes(eventID string) []string {
	e.t.Helper()
	rows, err := e.store.Pool().Query(context.Background(),
		`SELECT outcome FROM events WHERE event_id = $1 ORDER BY received_at, delivery_id, seq`, eventID)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, o)
	}
	return out
}

func (e *env) sfCount(sql string) int {
	e.t.Helper()
	var n int
	if err := e.store.Pool().QueryRow(context.Background(), sql).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

func sfMicros(stamp string) float64 {
	t, _ := time.Parse(time.RFC3339Nano, stamp)
	return float64(t.UnixMicro())
}

func TestSalesforceContactLifecycle(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.sfProvider("sf", nil)
	token := e.token("acme")
	contact := sfFixture(t, "contact.xml")
	const eventID = sfOrg + ":04l5e00000ZzYxWAAV"

	e.sfAcked("sf", contact)
	status, rec := e.get("/api/v1/tenants/acme/records/sf/contact/0035e00000Q7kLmAAB", token)
	if status != 200 || rec["revision"] != sfMicros("2026-11-29T10:00:00Z") || rec["last_applied_event"] != eventID {
		t.Fatalf("record %d %v", status, rec)
	}
	snap, _ := rec["snapshot"].(map[string]any)
	if v, ok := snap["MobilePhone"]; !ok || v != nil || snap["LastName"] != "Lovelace & Co" || snap["Id"] != "0035e00000Q7kLmAAB" ||
		snap["SystemModstamp"] != "2026-11-29T10:00:00.000Z" {
		t.Fatalf("snapshot %v", snap)
	}

	// Salesforce redelivers the same message: a duplicate, still acknowledged.
	e.sfAcked("sf", contact)
	if got := e.sfOutcomes(eventID); strings.Join(got, ",") != "applied,duplicate" {
		t.Fatalf("outcomes %v, want applied then duplicate", got)
	}

	// An older SystemModstamp for the same record, from another notification.
	older := bytes.ReplaceAll(contact, []byte("04l5e00000ZzYxWAAV"), []byte("04l5e00000ZzYxWAAW"))
	older = bytes.ReplaceAll(older, []byte("2026-11-29T10:00:00.000Z"), []byte("2026-11-29T09:00:00.000Z"))
	older = bytes.ReplaceAll(older, []byte("Lovelace &amp; Co"), []byte("Byron"))
	e.sfAcked("sf", older)
	if got := e.sfOutcomes(sfOrg + ":04l5e00000ZzYxWAAW"); strings.Join(got, ",") != "stale" {
		t.Fatalf("older modstamp: %v, want stale", got)
	}

	// A newer one is applied.
	newer := bytes.ReplaceAll(contact, []byte("04l5e00000ZzYxWAAV"), []byte("04l5e00000ZzYxWAAX"))
	newer = bytes.ReplaceAll(newer, []byte("2026-11-29T10:00:00.000Z"), []byte("2026-11-29T11:30:00.123456Z"))
	e.sfAcked("sf", newer)
	if got := e.sfOutcomes(sfOrg + ":04l5e00000ZzYxWAAX"); strings.Join(got, ",") != "applied" {
		t.Fatalf("newer modstamp: %v, want applied", got)
	}
	_, rec = e.get("/api/v1/tenants/acme/records/sf/contact/0035e00000Q7kLmAAB", token)
	if rec["revision"] != sfMicros("2026-11-29T11:30:00.123456Z") || rec["application_count"] != 2.0 {
		t.Fatalf("record after newer: %v", rec)
	}

	// Without SystemModstamp: unversioned, and no record is created.
	e.sfAcked("sf", sfFixture(t, "no_modstamp.xml"))
	if got := e.sfOutcomes(sfOrg + ":04l5e00000ZzYyAAAV"); strings.Join(got, ",") != "unversioned" {
		t.Fatalf("no modstamp: %v, want unversioned", got)
	}
	if status, _ := e.get("/api/v1/tenants/acme/records/sf/contact/0035e00000Q7kLoAAB", token); status != 404 {
		t.Fatalf("unversioned notification created a record: %d", status)
	}
}

func TestSalesforceBatch(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.sfProvider("sf", nil)
	e.sfAcked("sf", sfFixture(t, "batch.xml"))
	rows, err := e.store.Pool().Query(context.Background(),
		`SELECT seq, event_id, object_type, action, object_id, revision, outcome, convert_from(payload, 'UTF8') FROM events ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	want := []struct{ id, typ, obj, stamp string }{
		{"04l5e00000ZzYxXAAV", "account", "0015e00000AbCdEAAZ", "2026-11-29T09:15:30.250Z"},
		{"04l5e00000ZzYxYAAV", "contact", "0035e00000Q7kLnAAB", "2026-11-29T09:16:00.000Z"},
		{"04l5e00000ZzYxZAAV", "lead", "00Q5e00000Lm3NoAAJ", "2026-11-29T09:17:45.000Z"},
	}
	n := 0
	for rows.Next() {
		var seq int
		var id, typ, action, obj, outcome, payload string
		var rev int64
		if err := rows.Scan(&seq, &id, &typ, &action, &obj, &rev, &outcome, &payload); err != nil {
			t.Fatal(err)
		}
		if seq >= len(want) {
			t.Fatalf("unexpected event %d %s", seq, id)
		}
		w := want[seq]
		if id != sfOrg+":"+w.id || typ != w.typ || action != "outbound" || obj != w.obj ||
			float64(rev) != sfMicros(w.stamp) || outcome != "applied" {
			t.Errorf("event %d: %s %s/%s %s rev %d %s", seq, id, typ, action, obj, rev, outcome)
		}
		if !strings.HasPrefix(payload, "<Notification>") || !strings.HasSuffix(payload, "</Notification>") ||
			!strings.Contains(payload, w.id) || strings.Count(payload, "<Notification>") != 1 {
			t.Errorf("event %d payload %q, want its own Notification element", seq, payload)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("%d events, want 3", n)
	}
	if got := e.sfCount(`SELECT count(*) FROM records`); got != 3 {
		t.Fatalf("%d records, want 3", got)
	}
}

func TestSalesforceRejectsSender(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.sfProvider("sf", nil)
	contact := sfFixture(t, "contact.xml")

	wrong := bytes.ReplaceAll(contact, []byte("<OrganizationId>"+sfOrg), []byte("<OrganizationId>00D5e000000ZzZzEAK"))
	missing := bytes.ReplaceAll(contact, []byte("<OrganizationId>"+sfOrg+"</OrganizationId>"), nil)
	for name, body := range map[string][]byte{"wrong org": wrong, "no org": missing} {
		status, answer, _ := e.sfPost("sf", body)
		if status != http.StatusUnauthorized || !strings.Contains(answer, "OrganizationId") {
			t.Errorf("%s: %d %s, want 401 naming OrganizationId", name, status, answer)
		}
	}
	if n := e.sfCount(`SELECT count(*) FROM events`) + e.sfCount(`SELECT count(*) FROM records`); n != 0 {
		t.Fatalf("%d events/records stored from refused deliveries", n)
	}
	e.flushRefusals()
	if n := e.sfCount(`SELECT sum(n) FROM outcome_counters WHERE outcome = 'delivery_rejected'`); n != 2 {
		t.Fatalf("%d refused deliveries counted, want 2", n)
	}
	if n := e.sfCount(`SELECT count(*) FROM deliveries WHERE status = 401 AND signature IN ('invalid', 'missing') AND body IS NULL`); n == 0 {
		t.Fatal("no refused delivery sampled, want one a second")
	}

	// Sender networks: the test server sees 127.0.0.1.
	e.sfProvider("sf-far", map[string]string{"org_id": sfOrg, "revision_field": "SystemModstamp", "allowed_networks": "10.0.0.0/8"})
	status, answer, _ := e.sfPost("sf-far", contact)
	if status != http.StatusUnauthorized || !strings.Contains(answer, "127.0.0.1") {
		t.Fatalf("outside allowed networks: %d %s, want 401 naming the address", status, answer)
	}
	e.sfProvider("sf-near", map[string]string{"org_id": sfOrg, "revision_field": "SystemModstamp", "allowed_networks": "10.0.0.0/8, 127.0.0.0/8"})
	e.sfAcked("sf-near", contact)

	// A 15-character org id matches the 18-character one Salesforce sends.
	e.sfProvider("sf-15", map[string]string{"org_id": sfOrg[:15]})
	e.sfAcked("sf-15", contact)
	e.sfProvider("sf-15-other", map[string]string{"org_id": "00D5e000000AbCe"})
	if status, _, _ := e.sfPost("sf-15-other", contact); status != http.StatusUnauthorized {
		t.Fatalf("other 15-character org: %d, want 401", status)
	}
}

func TestSalesforceMalformed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.sfProvider("sf", nil)
	contact := string(sfFixture(t, "contact.xml"))
	for name, body := range map[string]string{
		"truncated":        contact[:len(contact)/2],
		"not xml":          `{"type":"contact.snapshot"}`,
		"mismatched tags":  strings.Replace(contact, "</sf:Email>", "</sf:Mail>", 1),
		"other document":   `<?xml version="1.0"?><root><OrganizationId>` + sfOrg + `</OrganizationId></root>`,
		"no notifications": `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body/></soapenv:Envelope>`,
		"no Notification": `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body>` +
			`<notifications xmlns="http://soap.sforce.com/2005/09/outbound"><OrganizationId>` + sfOrg + `</OrganizationId></notifications></soapenv:Body></soapenv:Envelope>`,
		"empty": ``,
	} {
		status, answer, _ := e.sfPost("sf", []byte(body))
		if status != http.StatusBadRequest || !strings.Contains(answer, `"error"`) {
			t.Errorf("%s: %d %s, want 400", name, status, answer)
		}
	}
	if n := e.sfCount(`SELECT count(*) FROM events`); n != 0 {
		t.Fatalf("%d events stored from malformed deliveries", n)
	}
}

func TestSalesforceRejectedNotifications(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.sfProvider("sf", nil)
	contact := sfFixture(t, "contact.xml")
	for _, tc := range []struct {
		name, old, new, reason string
	}{
		{"no record id", "<sf:Id>0035e00000Q7kLmAAB</sf:Id>", "", "no Id"},
		{"bad modstamp", "2026-11-29T10:00:00.000Z", "yesterday", "not a date-time"},
		{"no notification id", "<Id>04l5e00000ZzYxWAAV</Id>", "", "Notification has no Id"},
	} {
		body := bytes.ReplaceAll(contact, []byte(tc.old), []byte(tc.new))
		body = bytes.ReplaceAll(body, []byte("04l5e00000ZzYxWAAV"), []byte("04l5e0000"+strings.ReplaceAll(tc.name, " ", "")))
		e.sfAcked("sf", body)
		var reason string
		err := e.store.Pool().QueryRow(context.Background(),
			`SELECT reason FROM events WHERE outcome = 'rejected' ORDER BY received_at DESC, delivery_id DESC LIMIT 1`).Scan(&reason)
		if err != nil || !strings.Contains(reason, tc.reason) {
			t.Errorf("%s: reason %q (%v), want it to contain %q", tc.name, reason, err, tc.reason)
		}
	}
	if n := e.sfCount(`SELECT count(*) FROM events WHERE outcome = 'rejected'`); n != 3 {
		t.Fatalf("%d rejected events, want 3", n)
	}
	if n := e.sfCount(`SELECT count(*) FROM records`); n != 0 {
		t.Fatalf("%d records from rejected notifications", n)
	}
}

func TestSalesforceRevisionField(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.sfProvider("sf", map[string]string{"org_id": sfOrg, "revision_field": "LastModifiedDate"})
	body := bytes.ReplaceAll(sfFixture(t, "contact.xml"), []byte("SystemModstamp"), []byte("LastModifiedDate"))
	e.sfAcked("sf", body)
	_, rec := e.get("/api/v1/tenants/acme/records/sf/contact/0035e00000Q7kLmAAB", e.token("acme"))
	if rec["revision"] != sfMicros("2026-11-29T10:00:00Z") {
		t.Fatalf("record %v", rec)
	}
	// The default field is then not a revision.
	e.sfAcked("sf", sfFixture(t, "no_modstamp.xml"))
	e.sfAcked("sf", bytes.ReplaceAll(sfFixture(t, "contact.xml"), []byte("04l5e00000ZzYxWAAV"), []byte("04l5e00000ZzYxWAAQ")))
	if got := e.sfOutcomes(sfOrg + ":04l5e00000ZzYxWAAQ"); strings.Join(got, ",") != "unversioned" {
		t.Fatalf("SystemModstamp with revision_field LastModifiedDate: %v, want unversioned", got)
	}
}
