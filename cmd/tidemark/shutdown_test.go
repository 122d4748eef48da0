package main

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/e2e"
)

// shutdownOrder is the order in which serve stops its services on SIGTERM:
// what accepts deliveries first, the pools last.
var shutdownOrder = []string{"http", "destination sender", "replay worker", "group committers", "refusal flusher", "database pools"}

var stoppedService = regexp.MustCompile(`msg=stopped service="?([^"=]+?)"? took=`)

// TestGracefulShutdownUnderLoad sends SIGTERM to serve in the middle of a
// load of signed deliveries from eight senders. Serve stops accepting,
// answers the deliveries it accepted, commits them, stops its background
// work and only then closes its pools, and exits 0 within its shutdown
// time. Every delivery answered 200 is in the event log as answered and no
// delivery is committed unanswered; nothing is answered that tells of a
// database gone (a 500, a 503 for an unavailable database), and the HTTP
// server had stopped before the pools closed, so nothing is answered after.
// A restarted serve then takes every delivery again, the answered ones as
// duplicates.
func TestGracefulShutdownUnderLoad(t *testing.T) {
	e2e.Require(t, "the go command (the test builds tidemark and stops it mid-load)")
	t.Parallel()
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 2))

	dbURL, secrets, pool, tenantID := crashSetup(t)

	load := newCrashLoad(t, rng)
	n := len(load.deliveries)
	exe := buildTidemark(t)
	srv := startServer(t, exe, serverEnv(dbURL, crashKey))
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	exit := 0
	first := sendPassStopping(t, srv, load, secrets, order, 100+rng.IntN(n/2-100), func() { exit = srv.terminate(time.Minute) })
	log := srv.stderr.String()
	if exit != 0 {
		t.Fatalf("serve exited with status %d after SIGTERM; its log:\n%s", exit, tailLines(log, 30))
	}
	t.Logf("after SIGTERM: %d deliveries acknowledged; answers once stopping: %v", len(first.acked), first.afterStop)
	for what := range first.afterStop {
		if strings.HasPrefix(what, "500") || strings.Contains(what, "database unavailable") {
			t.Errorf("answered %q during shutdown (%d times): the database went before the answers", what, first.afterStop[what])
		}
	}

	var stopped []string
	for _, m := range stoppedService.FindAllStringSubmatch(log, -1) {
		stopped = append(stopped, m[1])
	}
	at := func(name string) int { return slices.Index(stopped, name) }
	for i, name := range shutdownOrder {
		if at(name) < 0 {
			t.Errorf("serve's log does not say it stopped %q; it stopped %q", name, stopped)
		} else if i > 0 && at(name) < at(shutdownOrder[i-1]) {
			t.Errorf("serve stopped %q before %q (order %q)", name, shutdownOrder[i-1], stopped)
		}
	}
	if len(stopped) == 0 || stopped[len(stopped)-1] != "database pools" {
		t.Errorf("the pools were not the last to close: %q", stopped)
	}

	// Every answer given is committed, and nothing committed went
	// unanswered: the shutdown waited for its requests.
	committed := queryInt(t, pool, `SELECT count(*) FROM deliveries WHERE tenant_id = $1 AND status = 200`, tenantID)
	if committed != len(first.acked) {
		t.Errorf("%d deliveries committed with status 200, %d answered 200 before serve exited", committed, len(first.acked))
	}

	// A new serve takes everything, the answered deliveries as duplicates.
	second := sendPass(t, startServer(t, exe, serverEnv(dbURL, crashKey)), load, secrets, rng.Perm(n), 0)
	if len(second.acked) != n {
		t.Fatalf("the restarted serve acknowledged %d of %d deliveries", len(second.acked), n)
	}
	passes := []crashPass{first, second}
	checkResends(t, load, passes)
	checkEventLog(t, pool, tenantID, load, passes)
}
