package cdc_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

var asOperator = pgtest.AsOperator(context.Background())

// connectedApp gives p connected app credentials.
func connectedApp(t *testing.T, s *postgres.Store, p domain.ProviderEndpoint) {
	t.Helper()
	if err := s.SetAPICredentials(asOperator, p.TenantID, p.ID, pull.Credentials{ClientID: "consumer-key",
		ClientSecret: "consumer-secret", LoginURL: "https://acme.my.salesforce.com"}); err != nil {
		t.Fatal(err)
	}
}

// audited lists the tenant's provider_update and cdc audit summaries.
func audited(t *testing.T, s *postgres.Store, tenantID int64) []string {
	t.Helper()
	rows, _ := s.Pool().Query(context.Background(), `SELECT action || ': ' || summary FROM audit_log
		WHERE tenant_id = $1 AND (action = 'provider_update' OR action LIKE 'cdc%') ORDER BY id`, tenantID)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSetCDC: turning a stream on needs connected app credentials (a
// token will not do); each change is audited as provider_update saying
// what changed; a bad channel or address is refused; a new channel drops
// the replay id, off and on again keeps it.
func TestSetCDC(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	on := domain.CDCConfig{Enabled: true}
	if _, err := s.SetCDC(asOperator, p.TenantID, p.ID, on); domain.ErrorCode(err) != domain.EINVALID ||
		!strings.Contains(domain.ErrorMessage(err), "connected app") {
		t.Fatalf("on without credentials: %v", err)
	}
	if err := s.SetAPICredentials(asOperator, p.TenantID, p.ID, pull.Credentials{Token: "pat-test-0123456789"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetCDC(asOperator, p.TenantID, p.ID, on); domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("on with a private app token: %v, want EINVALID", err)
	}
	if _, err := s.SetCDC(asOperator, p.TenantID, p.ID+100, domain.CDCConfig{}); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Fatalf("another provider: %v, want ENOTFOUND", err)
	}
	for _, bad := range []domain.CDCConfig{{Enabled: true, Channel: "/data/Contact"}, {Enabled: true, Channel: "ChangeEvents"},
		{Enabled: true, PubSubAddress: "https://api.pubsub.salesforce.com"}, {Enabled: true, PubSubAddress: "host:99999"}} {
		if _, err := s.SetCDC(asOperator, p.TenantID, p.ID, bad); domain.ErrorCode(err) != domain.EINVALID {
			t.Errorf("%+v: %v, want EINVALID", bad, err)
		}
	}
	connectedApp(t, s, p)
	st, err := s.SetCDC(asOperator, p.TenantID, p.ID, on)
	if err != nil || !st.Enabled || st.Channel != domain.DefaultCDCChannel || st.Address() != domain.DefaultPubSubAddress {
		t.Fatalf("on: %+v, %v", st, err)
	}
	if _, err := s.Pool().Exec(context.Background(), `UPDATE cdc_streams SET replay_id = '\x01', committed_at = now() WHERE tenant_id = $1`, p.TenantID); err != nil {
		t.Fatal(err)
	}
	if st, err = s.SetCDC(asOperator, p.TenantID, p.ID, domain.CDCConfig{}); err != nil || st.Enabled || st.ReplayID == nil || st.CommittedAt.IsZero() {
		t.Fatalf("off keeps the replay id: %+v, %v", st, err)
	}
	st, err = s.SetCDC(asOperator, p.TenantID, p.ID, domain.CDCConfig{Enabled: true, Channel: "/data/ContactChangeEvent",
		PubSubAddress: "127.0.0.1:7443", AllowPrivate: true})
	// ...and no commit time: the subscriber backfills since the commit time
	// of a stream whose replay id was refused, not of another channel's.
	if err != nil || st.ReplayID != nil || !st.CommittedAt.IsZero() || st.Channel != "/data/ContactChangeEvent" || st.Address() != "127.0.0.1:7443" {
		t.Fatalf("a new channel: %+v, %v", st, err)
	}
	want := []string{
		"provider_update: Change Data Capture off → on; CDC channel none → /data/ChangeEvents",
		"provider_update: Change Data Capture on → off",
		"provider_update: Change Data Capture off → on; CDC channel /data/ChangeEvents → /data/ContactChangeEvent; replay id cleared; " +
			"Pub/Sub address api.pubsub.salesforce.com:7443 → 127.0.0.1:7443; private Pub/Sub addresses allowed",
	}
	if got := audited(t, s, p.TenantID); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audited\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCDCLease: one subscriber at a time; the holder takes its lease
// again; a lease released or lapsed is another's; a stream turned off is
// nobody's, and no longer listed among those that are on, across tenants.
func TestCDCLease(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	lease := func(holder string, ttl time.Duration) bool {
		t.Helper()
		_, ok, err := s.LeaseCDC(asOperator, p.TenantID, p.ID, holder, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if lease("a", time.Minute) {
		t.Fatal("a stream never set up was leased")
	}
	connectedApp(t, s, p)
	if _, err := s.SetCDC(asOperator, p.TenantID, p.ID, domain.CDCConfig{Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if !lease("a", time.Minute) || lease("b", time.Minute) || !lease("a", time.Minute) {
		t.Fatal("a holds the lease, b is refused, a takes it again: not so")
	}
	st, _, err := s.CDCStream(asOperator, p.TenantID, p.ID)
	if err != nil || !st.Subscribed(time.Now()) || st.LeasedBy != "a" {
		t.Fatalf("stream %+v, %v: subscribed by a", st, err)
	}
	if err := s.ReleaseCDC(asOperator, p.TenantID, p.ID, "a"); err != nil {
		t.Fatal(err)
	}
	if !lease("b", time.Millisecond) {
		t.Fatal("b could not take a released lease")
	}
	time.Sleep(20 * time.Millisecond)
	if !lease("a", time.Minute) {
		t.Fatal("a could not take b's lapsed lease")
	}
	other := pgtest.Provider(t, s, "globex", "crm")
	connectedApp(t, s, other)
	if _, err := s.SetCDC(asOperator, other.TenantID, other.ID, domain.CDCConfig{Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if refs, err := s.EnabledCDCStreams(asOperator); err != nil || len(refs) != 2 ||
		refs[0] != (domain.CDCStreamRef{TenantID: p.TenantID, ProviderID: p.ID, TenantSlug: "acme", Provider: "crm"}) || refs[1].TenantSlug != "globex" {
		t.Fatalf("enabled streams %+v, %v", refs, err)
	}
	if _, err := s.SetCDC(asOperator, p.TenantID, p.ID, domain.CDCConfig{}); err != nil {
		t.Fatal(err)
	}
	if refs, err := s.EnabledCDCStreams(asOperator); err != nil || len(refs) != 1 || refs[0].TenantSlug != "globex" {
		t.Fatalf("enabled streams after one was turned off: %+v, %v", refs, err)
	}
	if lease("a", time.Minute) {
		t.Fatal("a stream turned off was leased")
	}
}

// TestCDCLeaseRace: holders racing for a free stream, again and again:
// never two at once.
func TestCDCLeaseRace(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	connectedApp(t, s, p)
	if _, err := s.SetCDC(asOperator, p.TenantID, p.ID, domain.CDCConfig{Enabled: true}); err != nil {
		t.Fatal(err)
	}
	for round := range 10 {
		won := make(chan string, 4)
		for _, holder := range []string{"a", "b", "c", "d"} {
			go func() {
				_, ok, err := s.LeaseCDC(asOperator, p.TenantID, p.ID, holder, time.Minute)
				if err != nil {
					t.Error(err)
				}
				if ok {
					won <- holder
				} else {
					won <- ""
				}
			}()
		}
		var winners []string
		for range 4 {
			if h := <-won; h != "" {
				winners = append(winners, h)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %v held the stream at once", round, winners)
		}
		if err := s.ReleaseCDC(asOperator, p.TenantID, p.ID, winners[0]); err != nil {
			t.Fatal(err)
		}
	}
}

// TestResetCDCAndErrors: a refused replay id is cleared once, counted and
// audited, the commit time kept for the backfill of the gap; the last
// error is kept with its time.
func TestResetCDCAndErrors(t *testing.T) {
	t.Parallel()
	s, p := pgtest.Setup(t, postgres.New)
	connectedApp(t, s, p)
	if _, err := s.SetCDC(asOperator, p.TenantID, p.ID, domain.CDCConfig{Enabled: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pool().Exec(context.Background(), `UPDATE cdc_streams SET replay_id = '\x0102', committed_at = now() - interval '4 days'
		WHERE tenant_id = $1`, p.TenantID); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordCDCError(asOperator, p.TenantID, p.ID, "replayid.corrupted "+strings.Repeat("x", 2000)); err != nil {
		t.Fatal(err)
	}
	r := domain.CDCReset{TenantID: p.TenantID, ProviderID: p.ID, From: []byte{1, 2}, Target: "crm", Summary: "replay id refused"}
	if err := s.ResetCDC(asOperator, r); err != nil {
		t.Fatal(err)
	}
	if err := s.ResetCDC(asOperator, r); !errors.Is(err, domain.ErrCDCMoved) {
		t.Fatalf("a second reset from the same replay id: %v, want ErrCDCMoved", err)
	}
	st, _, err := s.CDCStream(asOperator, p.TenantID, p.ID)
	if age, ok := st.ReplayAge(time.Now()); err != nil || st.ReplayID != nil || st.CorruptedReplays != 1 || !ok || age < 95*time.Hour ||
		!strings.HasPrefix(st.LastError, "replayid.corrupted") || len([]rune(st.LastError)) > 1001 || st.LastErrorAt.IsZero() {
		t.Fatalf("stream %+v, %v", st, err)
	}
	if got := audited(t, s, p.TenantID); len(got) != 2 || got[1] != "cdc_replay_reset: replay id refused" {
		t.Fatalf("audited %q", got)
	}
}
