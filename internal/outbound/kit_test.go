package outbound_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/outbound"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/internal/whsig"
	"github.com/tidemark/tidemark/postgres"
)

// The kit of the sender's tests: a store on a fresh database with a tenant
// and a provider, changes made by real ingest, a destination created
// through storage, a sender running until the test ends, and a receiver
// that verifies signatures and records what arrives.

var testKey = []byte("0123456789abcdef0123456789abcdef")

var asCLI = domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})

type env struct {
	store *postgres.Store
	pool  *pgxpool.Pool // for what a test writes as another component would (alert events)
	p     domain.ProviderEndpoint
}

func newEnv(t testing.TB) env {
	t.Helper()
	pool := testdb.New(t)
	s, err := postgres.New(pool, testKey)
	if err != nil {
		t.Fatal(err)
	}
	tn, err := s.CreateTenant(asCLI, "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConnectProvider(asCLI, tn.ID, "crm", "standard", "whsec_dGVzdA==", nil); err != nil {
		t.Fatal(err)
	}
	p, err := s.Endpoint(asCLI, "acme", "crm")
	if err != nil {
		t.Fatal(err)
	}
	return env{store: s, pool: pool, p: p}
}

// ingest applies revision rev of contact's snapshot: one change.
func (e env) ingest(t testing.TB, contact string, rev int64) {
	t.Helper()
	snapshot := fmt.Sprintf(`{"name":"n%d"}`, rev)
	ev := domain.Event{EventID: fmt.Sprintf("%s-%d", contact, rev), ObjectID: contact, Revision: &rev,
		Scope: domain.ScopeName{ObjectType: "contact", Action: "snapshot"}, Snapshot: json.RawMessage(snapshot),
		Timestamp: "2026-11-29T10:00:00Z", Payload: []byte(snapshot)}
	d := domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: e.p.TenantID, ProviderID: e.p.ID,
		ReceivedAt: time.Now(), Status: 200, Signature: domain.SignatureValid}
	r, err := e.store.Ingest(context.Background(), d, e.p, []domain.Event{ev})
	if err != nil || r[0].Outcome != domain.Applied {
		t.Fatalf("ingest %s: %v %+v", ev.EventID, err, r)
	}
}

// destination creates a destination; the URL may be a loopback address
// only with allowPrivate (the CLI's --allow-private).
func (e env) destination(t testing.TB, nd stream.NewDestination) (stream.Destination, string) {
	t.Helper()
	d, secret, err := e.store.CreateDestination(asCLI, e.p.TenantID, nd)
	if err != nil {
		t.Fatal(err)
	}
	return d, secret
}

// fast are sender options for tests: short leases and polls.
func fast() outbound.Options {
	return outbound.Options{LeaseTTL: 3 * time.Second, LeaseEvery: 300 * time.Millisecond, Poll: 50 * time.Millisecond}
}

// run runs a sender on the store until the returned stop is called or the
// test ends; stop waits for Run to return.
func (e env) run(t testing.TB, o outbound.Options) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- outbound.New(e.store, o).Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("sender: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// arrival is a message a receiver accepted.
type arrival struct {
	id       string // webhook-id
	record   string // object_id
	revision int64
	position int64
	at       time.Time
	commit   time.Time
}

// receiver is a destination's server. Each request is verified and
// recorded; answer decides the response (nil: 200).
type receiver struct {
	t      testing.TB
	secret string
	srv    *httptest.Server

	mu          sync.Mutex
	requests    []arrival // every verified request
	delivered   []arrival // those answered 2xx
	inFlight    int
	maxInFlight int
	answer      func(a arrival, w http.ResponseWriter, r *http.Request) int
}

func newReceiver(t testing.TB) *receiver {
	rc := &receiver{t: t}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) setAnswer(f func(a arrival, w http.ResponseWriter, r *http.Request) int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.answer = f
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	secret, answer := rc.secret, rc.answer
	rc.inFlight++
	rc.maxInFlight = max(rc.maxInFlight, rc.inFlight)
	rc.mu.Unlock()
	defer func() { rc.mu.Lock(); rc.inFlight--; rc.mu.Unlock() }()
	if err := whsig.Verify(secret, r.Header, body, time.Now(), 5*time.Minute); err != nil {
		rc.t.Errorf("signature: %v", err)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var m struct {
		Type      string `json:"type"`
		Timestamp string `json:"timestamp"`
		Data      struct {
			ID          string    `json:"id"`
			Type        string    `json:"type"`
			ObjectID    string    `json:"object_id"`
			Revision    int64     `json:"revision"`
			CommittedAt time.Time `json:"committed_at"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &m); err != nil || m.Type != m.Data.Type || m.Data.ID != r.Header.Get("webhook-id") {
		rc.t.Errorf("message %s: %v", body, err)
	}
	var pos int64
	fmt.Sscanf(m.Data.ID[strings.LastIndexByte(m.Data.ID, '_')+1:], "%d", &pos)
	a := arrival{id: m.Data.ID, record: m.Data.ObjectID, revision: m.Data.Revision, position: pos, at: time.Now(), commit: m.Data.CommittedAt}
	status := http.StatusOK
	if answer != nil {
		status = answer(a, w, r)
	}
	if r.Context().Err() != nil {
		return // the sender gave up on this request
	}
	rc.mu.Lock()
	rc.requests = append(rc.requests, a)
	if status >= 200 && status < 300 {
		rc.delivered = append(rc.delivered, a)
	}
	rc.mu.Unlock()
	w.WriteHeader(status)
}

func (rc *receiver) got() (requests, delivered []arrival, maxInFlight int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]arrival(nil), rc.requests...), append([]arrival(nil), rc.delivered...), rc.maxInFlight
}

// httpDestination creates a destination posting to rc, private addresses
// allowed (rc listens on loopback).
func (e env) httpDestination(t testing.TB, rc *receiver, maxInFlight int) stream.Destination {
	t.Helper()
	d, secret := e.destination(t, stream.NewDestination{URL: rc.srv.URL + "/hook", AllowPrivate: true, MaxInFlight: maxInFlight})
	rc.mu.Lock()
	rc.secret = secret
	rc.mu.Unlock()
	return d
}

// waitFor polls cond until it holds, failing the test after limit.
func waitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// attempts lists a destination's attempts, oldest first.
func (e env) attempts(t testing.TB, id int64) []stream.DestinationAttempt {
	t.Helper()
	as, _, err := e.store.DestinationAttempts(context.Background(), e.p.TenantID, id, domain.Page{Limit: domain.MaxPageLimit})
	if err != nil {
		t.Fatal(err)
	}
	for i, j := 0, len(as)-1; i < j; i, j = i+1, j-1 {
		as[i], as[j] = as[j], as[i]
	}
	return as
}

// tenant is another tenant of e's store, with a provider crm.
func (e env) tenant(t testing.TB, slug string) env {
	t.Helper()
	tn, err := e.store.CreateTenant(asCLI, slug, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.ConnectProvider(asCLI, tn.ID, "crm", "standard", "whsec_dGVzdA==", nil); err != nil {
		t.Fatal(err)
	}
	p, err := e.store.Endpoint(asCLI, slug, "crm")
	if err != nil {
		t.Fatal(err)
	}
	return env{store: e.store, pool: e.pool, p: p}
}

// raiseDestinationLimit lets e's tenant have n destinations, as an admin
// does with tidemark tenant update --max-destinations.
func raiseDestinationLimit(t testing.TB, e env, n int) {
	t.Helper()
	if _, err := e.store.UpdateTenant(asCLI, e.p.TenantSlug, domain.TenantUpdate{MaxDestinations: &n}); err != nil {
		t.Fatal(err)
	}
}
