package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/internal/whsig"
	"github.com/tidemark/tidemark/postgres"
)

// TestSenderSurvivesSIGKILL: serve sends a destination's changes while
// they are ingested; killed with SIGKILL in the middle and started again,
// it delivers every change (at least once), each record's in position
// order. The restarted node waits for the dead one's lease to run out.
func TestSenderSurvivesSIGKILL(t *testing.T) {
	e2e.Require(t, "the go command (the test builds tidemark and kills it mid-send)")
	t.Parallel()
	ctx := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})
	dbURL := testdb.NewURL(t)
	key, _ := base64.StdEncoding.DecodeString(crashKey)
	store, err := postgres.New(checkerPool(t, dbURL), key)
	if err != nil {
		t.Fatal(err)
	}
	tn, err := store.CreateTenant(ctx, crashTenant, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.ConnectProvider(ctx, tn.ID, crashStandard, "standard", "whsec_dGVzdA==", nil); err != nil {
		t.Fatal(err)
	}
	p, err := store.Endpoint(ctx, crashTenant, crashStandard)
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var secret string
	delivered := map[string][]int64{} // by record, the positions answered 2xx in arrival order
	count := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if err := whsig.Verify(secret, r.Header, body, time.Now(), time.Minute); err != nil {
			t.Errorf("signature: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var m struct {
			Data struct {
				ObjectID string `json:"object_id"`
			} `json:"data"`
		}
		json.Unmarshal(body, &m)
		var pos int64
		fmt.Sscanf(r.Header.Get("webhook-id"), fmt.Sprintf("chg_%d_%%d", p.TenantID), &pos)
		delivered[m.Data.ObjectID] = append(delivered[m.Data.ObjectID], pos)
		count++
		time.Sleep(2 * time.Millisecond)
	}))
	defer srv.Close()
	d, s, err := store.CreateDestination(ctx, p.TenantID, stream.NewDestination{URL: srv.URL, AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	secret = s
	mu.Unlock()
	got := func() int { mu.Lock(); defer mu.Unlock(); return count }

	exe := buildTidemark(t)
	env := serverEnv(dbURL, crashKey)
	server := startServer(t, exe, env)
	const records, revisions = 20, 15
	ingested := make(chan struct{})
	go func() {
		defer close(ingested)
		for rev := int64(1); rev <= revisions; rev++ {
			for r := range records {
				ev := domain.Event{EventID: fmt.Sprintf("c%d-%d", r, rev), ObjectID: fmt.Sprint("c", r), Revision: &rev,
					Scope: domain.ScopeName{ObjectType: "contact", Action: "snapshot"}, Snapshot: json.RawMessage(`{}`),
					Payload: []byte(`{}`)}
				dl := domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: p.TenantID, ProviderID: p.ID,
					ReceivedAt: time.Now(), Status: 200, Signature: domain.SignatureValid}
				if _, err := store.Ingest(context.Background(), dl, p, []domain.Event{ev}); err != nil {
					t.Errorf("ingest: %v", err)
					return
				}
				time.Sleep(time.Millisecond)
			}
		}
	}()
	deadline := time.Now().Add(time.Minute)
	for got() < 50 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	server.kill()
	killedAt := got()
	t.Logf("killed serve after %d deliveries", killedAt)
	<-ingested
	startServer(t, exe, env)
	const total = records * revisions
	deadline = time.Now().Add(2 * time.Minute)
	for {
		mu.Lock()
		seen := map[int64]bool{}
		for _, ps := range delivered {
			for _, p := range ps {
				seen[p] = true
			}
		}
		mu.Unlock()
		if len(seen) == total {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d changes delivered within 2 minutes of the restart", len(seen), total)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for r, ps := range delivered {
		for i := 1; i < len(ps); i++ {
			if ps[i] < ps[i-1] {
				t.Errorf("record %s: change %d delivered after %d", r, ps[i], ps[i-1])
			}
		}
	}
	t.Logf("%d deliveries of %d changes (%d repeats); destination %d", count, total, count-total, d.ID)
}
