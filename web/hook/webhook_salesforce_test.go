package hook_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/netlist"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/web"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

func sfMicros(stamp string) float64 {
	t, _ := time.Parse(time.RFC3339Nano, stamp)
	return float64(t.UnixMicro())
}

func TestSalesforceContactLifecycle(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	sf := webtest.SfProvider(e, "sf", nil)
	token := e.Token("acme")
	contact := webtest.SfFixture(t, "contact.xml")
	const eventID = webtest.SfOrg + ":04l5e00000ZzYxWAAV"

	sf.Acked(contact)
	status, rec := e.Get("/api/v1/tenants/acme/records/sf/contact/0035e00000Q7kLmAAB", token)
	if status != 200 || rec["revision"] != sfMicros("2026-11-29T10:00:00Z") || rec["last_applied_event"] != eventID {
		t.Fatalf("record %d %v", status, rec)
	}
	snap, _ := rec["snapshot"].(map[string]any)
	if v, ok := snap["MobilePhone"]; !ok || v != nil || snap["LastName"] != "Lovelace & Co" || snap["Id"] != "0035e00000Q7kLmAAB" ||
		snap["SystemModstamp"] != "2026-11-29T10:00:00.000Z" {
		t.Fatalf("snapshot %v", snap)
	}

	// Salesforce redelivers the same message: a duplicate, still acknowledged.
	sf.Acked(contact)
	if got := webtest.SfOutcomes(e, eventID); strings.Join(got, ",") != "applied,duplicate" {
		t.Fatalf("outcomes %v, want applied then duplicate", got)
	}

	// An older SystemModstamp for the same record, from another notification.
	older := bytes.ReplaceAll(contact, []byte("04l5e00000ZzYxWAAV"), []byte("04l5e00000ZzYxWAAW"))
	older = bytes.ReplaceAll(older, []byte("2026-11-29T10:00:00.000Z"), []byte("2026-11-29T09:00:00.000Z"))
	older = bytes.ReplaceAll(older, []byte("Lovelace &amp; Co"), []byte("Byron"))
	sf.Acked(older)
	if got := webtest.SfOutcomes(e, webtest.SfOrg+":04l5e00000ZzYxWAAW"); strings.Join(got, ",") != "stale" {
		t.Fatalf("older modstamp: %v, want stale", got)
	}

	// A newer one is applied.
	newer := bytes.ReplaceAll(contact, []byte("04l5e00000ZzYxWAAV"), []byte("04l5e00000ZzYxWAAX"))
	newer = bytes.ReplaceAll(newer, []byte("2026-11-29T10:00:00.000Z"), []byte("2026-11-29T11:30:00.123456Z"))
	sf.Acked(newer)
	if got := webtest.SfOutcomes(e, webtest.SfOrg+":04l5e00000ZzYxWAAX"); strings.Join(got, ",") != "applied" {
		t.Fatalf("newer modstamp: %v, want applied", got)
	}
	_, rec = e.Get("/api/v1/tenants/acme/records/sf/contact/0035e00000Q7kLmAAB", token)
	if rec["revision"] != sfMicros("2026-11-29T11:30:00.123456Z") || rec["application_count"] != 2.0 {
		t.Fatalf("record after newer: %v", rec)
	}

	// Without SystemModstamp: unversioned, and no record is created.
	sf.Acked(webtest.SfFixture(t, "no_modstamp.xml"))
	if got := webtest.SfOutcomes(e, webtest.SfOrg+":04l5e00000ZzYyAAAV"); strings.Join(got, ",") != "unversioned" {
		t.Fatalf("no modstamp: %v, want unversioned", got)
	}
	if status, _ := e.Get("/api/v1/tenants/acme/records/sf/contact/0035e00000Q7kLoAAB", token); status != 404 {
		t.Fatalf("unversioned notification created a record: %d", status)
	}
}

func TestSalesforceBatch(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	sf := webtest.SfProvider(e, "sf", nil)
	sf.Acked(webtest.SfFixture(t, "batch.xml"))
	rows, err := e.Store.Pool().Query(context.Background(),
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
		if id != webtest.SfOrg+":"+w.id || typ != w.typ || action != "outbound" || obj != w.obj ||
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
	if got := webtest.SfCount(e, `SELECT count(*) FROM records`); got != 3 {
		t.Fatalf("%d records, want 3", got)
	}
}

func TestSalesforceRejectsSender(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	sf := webtest.SfProvider(e, "sf", nil)
	contact := webtest.SfFixture(t, "contact.xml")

	wrong := bytes.ReplaceAll(contact, []byte("<OrganizationId>"+webtest.SfOrg), []byte("<OrganizationId>00D5e000000ZzZzEAK"))
	missing := bytes.ReplaceAll(contact, []byte("<OrganizationId>"+webtest.SfOrg+"</OrganizationId>"), nil)
	for name, body := range map[string][]byte{"wrong org": wrong, "no org": missing} {
		status, answer, _ := sf.Post(body)
		if status != http.StatusUnauthorized || !strings.Contains(answer, "OrganizationId") {
			t.Errorf("%s: %d %s, want 401 naming OrganizationId", name, status, answer)
		}
	}
	if n := webtest.SfCount(e, `SELECT count(*) FROM events`) + webtest.SfCount(e, `SELECT count(*) FROM records`); n != 0 {
		t.Fatalf("%d events/records stored from refused deliveries", n)
	}
	e.FlushRefusals()
	if n := webtest.SfCount(e, `SELECT sum(n) FROM outcome_counters WHERE outcome = 'delivery_rejected'`); n != 2 {
		t.Fatalf("%d refused deliveries counted, want 2", n)
	}
	if n := webtest.SfCount(e, `SELECT count(*) FROM deliveries WHERE status = 401 AND signature IN ('invalid', 'missing') AND body IS NULL`); n == 0 {
		t.Fatal("no refused delivery sampled, want one a second")
	}

	// Sender networks: the test server sees 127.0.0.1.
	far := webtest.SfProvider(e, "sf-far", map[string]string{"org_id": webtest.SfOrg, "revision_field": "SystemModstamp", "allowed_networks": "10.0.0.0/8"})
	status, answer, _ := far.Post(contact)
	if status != http.StatusUnauthorized || !strings.Contains(answer, "127.0.0.1") {
		t.Fatalf("outside allowed networks: %d %s, want 401 naming the address", status, answer)
	}
	webtest.SfProvider(e, "sf-near", map[string]string{"org_id": webtest.SfOrg, "revision_field": "SystemModstamp", "allowed_networks": "10.0.0.0/8, 127.0.0.0/8"}).Acked(contact)

	// A 15-character org id matches the 18-character one Salesforce sends.
	webtest.SfProvider(e, "sf-15", map[string]string{"org_id": webtest.SfOrg[:15]}).Acked(contact)
	other := webtest.SfProvider(e, "sf-15-other", map[string]string{"org_id": "00D5e000000AbCe"})
	if status, _, _ := other.Post(contact); status != http.StatusUnauthorized {
		t.Fatalf("other 15-character org: %d, want 401", status)
	}
}

func TestSalesforceMalformed(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	sf := webtest.SfProvider(e, "sf", nil)
	contact := string(webtest.SfFixture(t, "contact.xml"))
	for name, body := range map[string]string{
		"truncated":        contact[:len(contact)/2],
		"not xml":          `{"type":"contact.snapshot"}`,
		"mismatched tags":  strings.Replace(contact, "</sf:Email>", "</sf:Mail>", 1),
		"other document":   `<?xml version="1.0"?><root><OrganizationId>` + webtest.SfOrg + `</OrganizationId></root>`,
		"no notifications": `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body/></soapenv:Envelope>`,
		"no Notification": `<soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/"><soapenv:Body>` +
			`<notifications xmlns="http://soap.sforce.com/2005/09/outbound"><OrganizationId>` + webtest.SfOrg + `</OrganizationId></notifications></soapenv:Body></soapenv:Envelope>`,
		"empty": ``,
	} {
		status, answer, _ := sf.Post([]byte(body))
		if status != http.StatusBadRequest || !strings.Contains(answer, `"error"`) {
			t.Errorf("%s: %d %s, want 400", name, status, answer)
		}
	}
	if n := webtest.SfCount(e, `SELECT count(*) FROM events`); n != 0 {
		t.Fatalf("%d events stored from malformed deliveries", n)
	}
}

func TestSalesforceRejectedNotifications(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	sf := webtest.SfProvider(e, "sf", nil)
	contact := webtest.SfFixture(t, "contact.xml")
	for _, tc := range []struct {
		name, old, new, reason string
	}{
		{"no record id", "<sf:Id>0035e00000Q7kLmAAB</sf:Id>", "", "no Id"},
		{"bad modstamp", "2026-11-29T10:00:00.000Z", "yesterday", "not a date-time"},
		{"no notification id", "<Id>04l5e00000ZzYxWAAV</Id>", "", "Notification has no Id"},
	} {
		body := bytes.ReplaceAll(contact, []byte(tc.old), []byte(tc.new))
		body = bytes.ReplaceAll(body, []byte("04l5e00000ZzYxWAAV"), []byte("04l5e0000"+strings.ReplaceAll(tc.name, " ", "")))
		sf.Acked(body)
		var reason string
		err := e.Store.Pool().QueryRow(context.Background(),
			`SELECT reason FROM events WHERE outcome = 'rejected' ORDER BY received_at DESC, delivery_id DESC LIMIT 1`).Scan(&reason)
		if err != nil || !strings.Contains(reason, tc.reason) {
			t.Errorf("%s: reason %q (%v), want it to contain %q", tc.name, reason, err, tc.reason)
		}
	}
	if n := webtest.SfCount(e, `SELECT count(*) FROM events WHERE outcome = 'rejected'`); n != 3 {
		t.Fatalf("%d rejected events, want 3", n)
	}
	if n := webtest.SfCount(e, `SELECT count(*) FROM records`); n != 0 {
		t.Fatalf("%d records from rejected notifications", n)
	}
}

func TestSalesforceRevisionField(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	sf := webtest.SfProvider(e, "sf", map[string]string{"org_id": webtest.SfOrg, "revision_field": "LastModifiedDate"})
	body := bytes.ReplaceAll(webtest.SfFixture(t, "contact.xml"), []byte("SystemModstamp"), []byte("LastModifiedDate"))
	sf.Acked(body)
	_, rec := e.Get("/api/v1/tenants/acme/records/sf/contact/0035e00000Q7kLmAAB", e.Token("acme"))
	if rec["revision"] != sfMicros("2026-11-29T10:00:00Z") {
		t.Fatalf("record %v", rec)
	}
	// The default field is then not a revision.
	sf.Acked(webtest.SfFixture(t, "no_modstamp.xml"))
	sf.Acked(bytes.ReplaceAll(webtest.SfFixture(t, "contact.xml"), []byte("04l5e00000ZzYxWAAV"), []byte("04l5e00000ZzYxWAAQ")))
	if got := webtest.SfOutcomes(e, webtest.SfOrg+":04l5e00000ZzYxWAAQ"); strings.Join(got, ",") != "unversioned" {
		t.Fatalf("SystemModstamp with revision_field LastModifiedDate: %v, want unversioned", got)
	}
}

// TestSalesforceForgeryRefused: the OrganizationId is no secret, so a
// message carrying it without the provider's token (or with a wrong one) is
// refused with 401, logged as refused, and changes nothing; a forged
// SystemModstamp far in the future cannot freeze the record.
func TestSalesforceForgeryRefused(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	sf := webtest.SfProvider(e, "sf", nil)
	contact := webtest.SfFixture(t, "contact.xml")
	sf.Acked(contact)

	forged := bytes.ReplaceAll(contact, []byte("04l5e00000ZzYxWAAV"), []byte("04l5e00000ForgedAAV"))
	forged = bytes.ReplaceAll(forged, []byte("2026-11-29T10:00:00.000Z"), []byte("9999-12-31T23:59:59.000Z"))
	forged = bytes.ReplaceAll(forged, []byte("Lovelace &amp; Co"), []byte("Forged"))
	for _, c := range []struct{ name, query, verdict, reason string }{
		{"no token", "", "missing", "must end in ?token="},
		{"empty token", "token=", "missing", "must end in ?token="},
		{"wrong token", "token=" + url.QueryEscape(sf.Token[1:]+"x"), "invalid", "does not match an active token"},
	} {
		status, answer, _ := sf.PostQuery(c.query, forged)
		if status != http.StatusUnauthorized || !strings.Contains(answer, c.reason) {
			t.Errorf("%s: %d %s, want 401 saying %q", c.name, status, answer, c.reason)
		}
		if answer == webtest.SfAck {
			t.Errorf("%s: a refused message was acknowledged", c.name)
		}
	}
	// Refusals are counted exactly and sampled (one per provider and
	// second) for the recent-deliveries list, never with their body.
	e.FlushRefusals()
	if n := webtest.SfCount(e, `SELECT coalesce(sum(n), 0) FROM outcome_counters WHERE outcome = 'delivery_rejected'`); n != 3 {
		t.Fatalf("%d refusals counted, want 3", n)
	}
	if n := webtest.SfCount(e, `SELECT count(*) FROM deliveries WHERE status = 401 AND body IS NULL AND reason LIKE '%token%'
	                   AND signature IN ('missing', 'invalid')`); n < 1 {
		t.Fatalf("%d refused deliveries kept for the console, want at least 1", n)
	}
	if n := webtest.SfCount(e, `SELECT count(*) FROM deliveries WHERE status <> 401 OR body IS NOT NULL`); n != 1 {
		t.Fatalf("%d deliveries besides the refusals and the genuine one", n-1)
	}
	if got := webtest.SfOutcomes(e, webtest.SfOrg+":04l5e00000ForgedAAV"); len(got) != 0 {
		t.Fatalf("forged message has events %v", got)
	}

	// The genuine record moves on with Salesforce's next update.
	newer := bytes.ReplaceAll(contact, []byte("04l5e00000ZzYxWAAV"), []byte("04l5e00000ZzYxWAAX"))
	newer = bytes.ReplaceAll(newer, []byte("2026-11-29T10:00:00.000Z"), []byte("2026-11-29T11:30:00.000Z"))
	sf.Acked(newer)
	_, rec := e.Get("/api/v1/tenants/acme/records/sf/contact/0035e00000Q7kLmAAB", e.Token("acme"))
	if rec["revision"] != sfMicros("2026-11-29T11:30:00Z") || rec["application_count"] != 2.0 {
		t.Fatalf("record after a forgery and a genuine update: %v", rec)
	}
}

// TestSalesforceTokenRotation: after a rotation the previous token keeps
// working; a second rotation, or retiring, ends it.
func TestSalesforceTokenRotation(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	ctx := webtest.CliContext()
	first := webtest.SfProvider(e, "sf", nil)
	p, err := e.Store.ProviderSummary(ctx, e.Tenant("acme").ID, "sf")
	if err != nil {
		t.Fatal(err)
	}
	k, _ := provider.Lookup(p.Kind)
	rotate := func() webtest.SfHook {
		t.Helper()
		token, err := k.NewSecret(p.Config)
		if err == nil {
			err = e.Store.RotateProviderSecret(ctx, p.TenantID, p.ID, token)
		}
		if err != nil {
			t.Fatal(err)
		}
		return webtest.SfHook{E: e, Name: "sf", Token: token}
	}
	contact := webtest.SfFixture(t, "contact.xml")
	n := 0
	deliver := func(h webtest.SfHook) int {
		t.Helper()
		n++
		body := bytes.ReplaceAll(contact, []byte("04l5e00000ZzYxWAAV"), []byte("04l5e0000Rotation"+strconv.Itoa(n)))
		status, _, _ := h.Post(body)
		return status
	}
	want := func(step string, h webtest.SfHook, status int) {
		t.Helper()
		if got := deliver(h); got != status {
			t.Errorf("%s: %d, want %d", step, got, status)
		}
	}

	second := rotate()
	want("first token after one rotation", first, http.StatusOK)
	want("second token after one rotation", second, http.StatusOK)
	third := rotate()
	want("first token after two rotations", first, http.StatusUnauthorized)
	want("second token after two rotations", second, http.StatusOK)
	want("third token after two rotations", third, http.StatusOK)
	if retired, err := e.Store.RetireProviderSecrets(ctx, p.TenantID, p.ID); err != nil || retired != 1 {
		t.Fatalf("retire: %d, %v", retired, err)
	}
	want("second token after retiring", second, http.StatusUnauthorized)
	want("third token after retiring", third, http.StatusOK)
}

// TestSalesforceAllowedNetworksBehindProxy: X-Forwarded-For names the
// sender only when the peer is a trusted proxy, so a forged header cannot
// get a message past the allowed networks.
func TestSalesforceAllowedNetworksBehindProxy(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	sf := webtest.SfProvider(e, "sf", map[string]string{"org_id": webtest.SfOrg, "revision_field": "SystemModstamp", "allowed_networks": "13.108.0.0/14"})
	serve := func(trusted string) string {
		prefixes, err := netlist.Parse(trusted)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(web.New(web.Config{Store: e.Store, Sessions: e.Store.SessionStore(),
			Ping: e.Store.Pool().Ping, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TrustedProxies: prefixes}).Handler())
		t.Cleanup(srv.Close)
		return srv.URL
	}
	n := 0
	post := func(base, xff string) int {
		t.Helper()
		n++
		body := bytes.ReplaceAll(webtest.SfFixture(t, "contact.xml"), []byte("04l5e00000ZzYxWAAV"), []byte("04l5e0000Proxy"+strconv.Itoa(n)))
		req, _ := http.NewRequest(http.MethodPost, base+"/webhooks/acme/sf?token="+url.QueryEscape(sf.Token), bytes.NewReader(body))
		req.Header.Set("Content-Type", "text/xml; charset=utf-8")
		req.Header.Set("X-Forwarded-For", xff)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		name, trusted, xff string
		want               int
	}{
		{"no trusted proxies", "", "13.108.1.2", http.StatusUnauthorized},
		{"peer is not a trusted proxy", "10.0.0.0/8", "13.108.1.2", http.StatusUnauthorized},
		{"trusted proxy", "127.0.0.0/8", "13.108.1.2", http.StatusOK},
		{"chain of trusted proxies", "127.0.0.0/8,10.0.0.0/8", "13.108.1.2, 10.0.0.7, 127.0.0.9", http.StatusOK},
		{"allowed address forged left of the client", "127.0.0.0/8", "13.108.1.2, 198.51.100.4", http.StatusUnauthorized},
		{"proxy naming an outside client", "127.0.0.0/8", "198.51.100.4", http.StatusUnauthorized},
	} {
		if got := post(serve(c.trusted), c.xff); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}
