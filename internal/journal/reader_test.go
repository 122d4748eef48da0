package journal_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/journal"
	"github.com/tidemark/tidemark/internal/pull/hubspot/hubspottest"
)

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// TestJournalFindsWhatWebhooksMissed follows the Webhooks Journal guide
// (https://developers.hubspot.com/docs/api-reference/latest/webhooks-journal/journal-entries/guide.md)
// through the fake: a change the webhook delivered comes out redundant, a
// missed one applied and counted found missed, a GDPR_DELETE erases the
// record; a second pass finds nothing new and writes nothing, a new entry
// is read from the stored offset.
func TestJournalFindsWhatWebhooksMissed(t *testing.T) {
	t.Parallel()
	f := setup(t)
	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	f.webhook(t, change{101, "email", "ada@example.com", at.UnixMilli()}, change{103, "email", "gone@example.com", at.UnixMilli()})

	f.hs.AppendEntry(portal, update(101, at, map[string]string{"email": "ada@example.com"}))
	f.hs.AppendEntry(portal, update(102, at.Add(time.Second), map[string]string{"firstname": "Grace"}))
	f.hs.AppendEntry(portal, update(103, at.Add(2*time.Second), map[string]string{"firstname": "Gone"}))
	f.hs.AppendEntry(portal, hubspottest.Entry{ObjectTypeID: "0-1", ObjectID: 103, Action: "GDPR_DELETE",
		SubscriptionType: "GDPR_PRIVACY_DELETION", OccurredAt: at.Add(3 * time.Second).UnixMilli()})

	r := f.reader(t)
	if err := r.Pass(f.ctx); err != nil {
		t.Fatal(err)
	}
	got, deliveries := f.outcomes(t)
	want := map[string][]string{
		"journal:contact:101:email:" + ms(at):                      {"redundant"},
		"journal:contact:102:firstname:" + ms(at.Add(time.Second)): {"applied"},
	}
	if deliveries != 1 || !equal(got, want) {
		t.Fatalf("journal outcomes %v in %d deliveries, want %v in one", got, deliveries, want)
	}
	offset, read, missed, _ := f.cursor(t)
	if j := f.hs.Journal(portal); offset != j[len(j)-1].Offset || read != 4 || missed != 1 {
		t.Fatalf("cursor at %q, %d read, %d found missed; want the last entry, 4 read, 1 found missed", offset, read, missed)
	}
	ref := domain.RecordRef{Provider: domain.DefaultAppProvider, ObjectType: "contact", ObjectID: "103"}
	if _, err := f.store.Record(f.ctx, f.tenant.ID, ref); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("record 103 after its GDPR_DELETE: %v, want it erased", err)
	}
	if !slices.Contains(f.auditActions(t), domain.ActionRecordErase) {
		t.Errorf("audit %v: no record erasure", f.auditActions(t))
	}

	if err := r.Pass(f.ctx); err != nil {
		t.Fatal(err)
	}
	if _, n := f.outcomes(t); n != 1 {
		t.Fatalf("a pass with nothing new wrote %d journal deliveries in all, want still 1", n)
	}
	f.hs.AppendEntry(portal, update(102, at.Add(time.Minute), map[string]string{"firstname": "Grace H."}))
	if err := r.Pass(f.ctx); err != nil {
		t.Fatal(err)
	}
	got, deliveries = f.outcomes(t)
	if id := "journal:contact:102:firstname:" + ms(at.Add(time.Minute)); deliveries != 2 || !slices.Equal(got[id], []string{"applied"}) {
		t.Fatalf("after a new entry: %v in %d deliveries", got, deliveries)
	}
	rec, err := f.store.Record(f.ctx, f.tenant.ID, domain.RecordRef{Provider: domain.DefaultAppProvider, ObjectType: "contact", ObjectID: "102"})
	if err != nil || !strings.Contains(string(rec.Snapshot), "Grace H.") {
		t.Fatalf("record 102: %s, %v", rec.Snapshot, err)
	}
}

// TestJournalErasesTwiceHarmlessly: a page whose commit failed after its
// GDPR_DELETE erased the record is read again; the second erasure finds
// nothing and the page commits.
func TestJournalErasesTwiceHarmlessly(t *testing.T) {
	t.Parallel()
	f := setup(t)
	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	f.webhook(t, change{103, "email", "gone@example.com", at.UnixMilli()})
	f.hs.AppendEntry(portal, hubspottest.Entry{ObjectTypeID: "0-1", ObjectID: 103, Action: "GDPR_DELETE",
		SubscriptionType: "GDPR_PRIVACY_DELETION", OccurredAt: at.Add(time.Second).UnixMilli()})
	ref := domain.RecordRef{Provider: domain.DefaultAppProvider, ObjectType: "contact", ObjectID: "103"}
	// The first reading erased, then crashed before its page committed.
	if _, err := f.store.EraseRecord(f.ctx, f.tenant.ID, ref); err != nil {
		t.Fatal(err)
	}
	if err := f.reader(t).Pass(f.ctx); err != nil {
		t.Fatal(err)
	}
	if _, n := f.outcomes(t); n != 1 {
		t.Fatalf("%d journal deliveries, want the page's one", n)
	}
	if offset, read, _, _ := f.cursor(t); offset == "" || read != 1 {
		t.Fatalf("cursor at %q, %d read: the page did not commit", offset, read)
	}
}

// TestJournalTwoReaders: two readers (two nodes) on one database read one
// journal at once; every page is committed once, each event decided once.
func TestJournalTwoReaders(t *testing.T) {
	t.Parallel()
	f := setup(t)
	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	const entries = 30
	for i := range entries {
		f.hs.AppendEntry(portal, update(int64(200+i), at.Add(time.Duration(i)*time.Second), map[string]string{"firstname": "n"}))
	}
	f.hs.SetFileDelay(5 * time.Millisecond)
	a, b := f.reader(t), f.reader(t)
	var wg sync.WaitGroup
	for _, r := range []*journal.Reader{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				if err := r.Pass(f.ctx); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	got, _ := f.outcomes(t)
	if len(got) != entries {
		t.Fatalf("%d events, want %d", len(got), entries)
	}
	for id, outcomes := range got {
		if !slices.Equal(outcomes, []string{"applied"}) {
			t.Errorf("event %s: %v, want applied once", id, outcomes)
		}
	}
	if _, read, missed, _ := f.cursor(t); read != entries || missed != entries {
		t.Fatalf("cursor: %d read, %d found missed; want %d each", read, missed, entries)
	}
}

// TestJournalOffsetCompareAndSet: a page written after another node moved
// the offset is refused and writes nothing.
func TestJournalOffsetCompareAndSet(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if _, ok, err := f.store.LeaseJournal(f.ctx, f.tenant.ID, f.install.ID, "node-a", time.Minute); err != nil || !ok {
		t.Fatalf("lease: %v, %v", ok, err)
	}
	if _, ok, err := f.store.LeaseJournal(f.ctx, f.tenant.ID, f.install.ID, "node-b", time.Minute); err != nil || ok {
		t.Fatalf("node-b took node-a's running lease: %v, %v", ok, err)
	}
	p, err := f.store.Endpoint(f.ctx, "acme", domain.DefaultAppProvider)
	if err != nil {
		t.Fatal(err)
	}
	page := func(eventID, from, to string) error {
		ms := time.Now().UnixMilli()
		e := domain.Event{EventID: eventID, Scope: domain.ScopeName{ObjectType: "contact", Action: "propertyChange"},
			ObjectID: "1", Property: "email", Snapshot: []byte(`{"email":"a@example.com"}`), Revision: &ms,
			RevisionTime: time.UnixMilli(ms), Payload: []byte(`{}`)}
		d := domain.Delivery{ID: newID(), TenantID: p.TenantID, ProviderID: p.ID, ReceivedAt: time.Now(), Status: 200,
			Signature: domain.SignatureValid, Body: []byte(`[]`), Source: domain.SourceJournal}
		_, err := f.store.IngestJournal(f.ctx, d, p, []domain.Event{e}, domain.JournalMove{TenantID: f.tenant.ID,
			InstallID: f.install.ID, From: from, To: to, Entries: 1})
		return err
	}
	if err := page("journal:a", "", "offset-1"); err != nil {
		t.Fatal(err)
	}
	if err := page("journal:b", "", "offset-1"); !errors.Is(err, domain.ErrJournalMoved) {
		t.Fatalf("the same page again: %v, want ErrJournalMoved", err)
	}
	got, n := f.outcomes(t)
	if n != 1 || len(got) != 1 {
		t.Fatalf("%d journal deliveries (%v), want the first page's alone", n, got)
	}
	if offset, read, _, _ := f.cursor(t); offset != "offset-1" || read != 1 {
		t.Fatalf("cursor at %q, %d read", offset, read)
	}
}

// TestJournalExpiredOffset: HubSpot dropped the entries after the offset
// (3 days of history): next answers 404, the gap is searched with the
// install's token, the expiry is counted and audited, and reading starts
// again from the earliest entry.
func TestJournalExpiredOffset(t *testing.T) {
	t.Parallel()
	f := setup(t)
	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	f.webhook(t, change{101, "email", "ada@example.com", at.UnixMilli()}) // the provider's scopes: contacts
	f.hs.AppendEntry(portal, update(101, at, map[string]string{"email": "ada@example.com"}))
	r := f.reader(t)
	if err := r.Pass(f.ctx); err != nil {
		t.Fatal(err)
	}
	// Changes the journal no longer holds, which the search finds.
	missedAt := time.Now().Add(-time.Minute)
	id := f.hs.Create("contact", missedAt, map[string]string{"email": "lin@example.com"})
	f.hs.AppendEntry(portal, update(104, missedAt, map[string]string{"firstname": "Lost"}))
	f.hs.Expire(portal, 2)
	later := f.hs.AppendEntry(portal, update(105, time.Now(), map[string]string{"firstname": "After"}))

	if err := r.Pass(f.ctx); err != nil {
		t.Fatal(err)
	}
	offset, _, missed, expirations := f.cursor(t)
	if expirations != 1 || offset != later {
		t.Fatalf("cursor at %q with %d expirations, want the entry after the expiry and 1", offset, expirations)
	}
	if missed < 2 {
		t.Errorf("found missed %d: want the search's record and the entry after the expiry", missed)
	}
	if _, err := f.store.Record(f.ctx, f.tenant.ID, domain.RecordRef{Provider: domain.DefaultAppProvider, ObjectType: "contact", ObjectID: id}); err != nil {
		t.Fatalf("record %s, which the search found: %v", id, err)
	}
	if n := count(f.auditActions(t), domain.AuditAppJournalExpired); n != 1 {
		t.Fatalf("audit %v: want app_journal_expired once", f.auditActions(t))
	}
	var backfilled int
	if err := f.store.Pool().QueryRow(f.ctx, `SELECT count(*) FROM deliveries WHERE tenant_id = $1 AND source = 'backfill'`,
		f.tenant.ID).Scan(&backfilled); err != nil || backfilled == 0 {
		t.Fatalf("%d backfill deliveries (%v): the gap was not searched", backfilled, err)
	}
}

// TestJournalRefusedRefresh: HubSpot refuses the install's refresh token
// (the app uninstalled): the install is marked needs_reconnect, audited
// once, and later passes skip it without calling HubSpot.
func TestJournalRefusedRefresh(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.hs.AppendEntry(portal, update(101, time.Now(), map[string]string{"email": "ada@example.com"}))
	f.hs.Uninstall(portal)
	r := f.reader(t)
	for range 3 {
		if err := r.Pass(f.ctx); err != nil {
			t.Fatal(err)
		}
	}
	installs, err := f.store.AppInstalls(f.ctx, f.app.Name)
	if err != nil || len(installs) != 1 || installs[0].Status != domain.InstallNeedsReconnect {
		t.Fatalf("installs %+v, %v: want needs_reconnect", installs, err)
	}
	if n := count(f.auditActions(t), domain.AuditAppNeedsReconnect); n != 1 {
		t.Fatalf("audit %v: want app_needs_reconnect once", f.auditActions(t))
	}
	if n := f.hs.Refreshes(); n != 1 {
		t.Fatalf("%d refreshes asked: the needs_reconnect install was not skipped", n)
	}
	if _, n := f.outcomes(t); n != 0 {
		t.Fatalf("%d journal deliveries", n)
	}
}

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func count(list []string, s string) int {
	n := 0
	for _, v := range list {
		if v == s {
			n++
		}
	}
	return n
}

func equal(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}
