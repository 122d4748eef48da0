package webtest

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/replay"
)

// rejectedHistory delivers n events to acme/crm while its scope is
// disabled, then enables it: a bulk replay of them applies each.
func (e *Env) RejectedHistory(n int) {
	e.T.Helper()
	e.SetScope(false)
	for i := range n {
		id := fmt.Sprintf("m%d", i)
		if status, _ := e.Deliver1(id, SnapshotBody("c-"+id, 1, `{"n":1}`)); status != http.StatusOK {
			e.T.Fatalf("delivery %d answered %d", i, status)
		}
	}
	e.SetScope(true)
}

// startReplay posts POST replays with body.
func (e *Env) StartReplay(token, body string) (int, map[string]any) {
	e.T.Helper()
	return e.Post("/api/v1/tenants/acme/replays", []byte(body),
		map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"})
}

// worker runs a replay worker until the returned stop is called, which
// waits for it to give its job back.
func (e *Env) Worker(id string) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		replay.Worker{Replayer: e.Web.Replayer(), Deliveries: e.Store, Log: QuietLog(), ID: id, Poll: 10 * time.Millisecond,
			Slice: 50 * time.Millisecond, Batch: 10}.Run(ctx)
	}()
	stop = func() { cancel(); <-done }
	e.T.Cleanup(stop)
	return stop
}

// job reads a replay job of acme.
func (e *Env) Job(id int64) domain.ReplayJob {
	e.T.Helper()
	j, err := e.Store.ReplayJob(context.Background(), e.Tenant("acme").ID, id)
	if err != nil {
		e.T.Fatal(err)
	}
	return j
}

// waitJob polls a job until ok says so, for at most 30 s.
func (e *Env) WaitJob(id int64, what string, ok func(domain.ReplayJob) bool) domain.ReplayJob {
	e.T.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if j := e.Job(id); ok(j) {
			return j
		}
	}
	e.T.Fatalf("job %d: %s did not happen: %+v", id, what, e.Job(id))
	return domain.ReplayJob{}
}

// replayCounts returns how many replays are stored and of how many
// distinct originals.
func (e *Env) ReplayCounts() (replays, originals int64) {
	e.T.Helper()
	if err := e.Store.Pool().QueryRow(context.Background(),
		`SELECT count(*), count(DISTINCT replay_of) FROM deliveries WHERE replay_of IS NOT NULL`).Scan(&replays, &originals); err != nil {
		e.T.Fatal(err)
	}
	return replays, originals
}
