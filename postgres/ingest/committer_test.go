package ingest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// TestQueuedEventsFollowPace: how many events may wait ahead of a delivery
// follows what the committer has been writing per second, so a tenant
// sending large batches to a fast committer is not refused, and a slow
// committer refuses early rather than letting deliveries outlive their
// budget in the queue.
func TestQueuedEventsFollowPace(t *testing.T) {
	t.Parallel()
	var q groupQueues
	in3s := time.Now().Add(3 * time.Second)
	if got := q.queuedEventsAllowed(in3s, true); got != minQueuedEvents {
		t.Errorf("before any group: %d, want %d", got, minQueuedEvents)
	}
	q.measured(2000, 200*time.Millisecond) // 10 000 events/s
	if got := q.queuedEventsAllowed(in3s, true); got < 14000 || got > 15000 {
		t.Errorf("at 10 000 events/s with 3 s left: %d, want about 15 000", got)
	}
	if got := q.queuedEventsAllowed(time.Time{}, false); got != minQueuedEvents {
		t.Errorf("no deadline: %d, want %d", got, minQueuedEvents)
	}
	for range 20 {
		q.measured(100, time.Second) // the committer slows to 100 events/s
	}
	if got := q.queuedEventsAllowed(in3s, true); got != minQueuedEvents {
		t.Errorf("at 100 events/s: %d, want the floor %d", got, minQueuedEvents)
	}
}

// TestOneSlowGroupKeepsThePace: a group a hundred times slower than the
// ones around it (a checkpoint, another node's row lock) leaves the pace,
// and so the events a tenant may queue, as they were. The smoothed pace
// this replaced lost a fifth of itself to each such group.
func TestOneSlowGroupKeepsThePace(t *testing.T) {
	t.Parallel()
	var q groupQueues
	in3s := time.Now().Add(3 * time.Second)
	for range 10 {
		q.measured(2000, 200*time.Millisecond) // 10 000 events/s
	}
	before := q.queuedEventsAllowed(in3s, true)
	q.measured(2000, 20*time.Second) // one group of 100 events/s
	if after := q.queuedEventsAllowed(in3s, true); after < before*9/10 {
		t.Errorf("after one slow group %d events may wait, before %d", after, before)
	}
}

// TestAdmissionReasons: a short queue is never refused; past the floor the
// refusal says why, for /metrics.
func TestAdmissionReasons(t *testing.T) {
	t.Parallel()
	w := &Writer{maxQueued: 8}
	jobs := func(n, events int) []*ingestJob {
		var js []*ingestJob
		for range n {
			js = append(js, &ingestJob{events: make([]domain.Event, events)})
		}
		return js
	}
	in3s := time.Now().Add(3 * time.Second)
	var slow groupQueues
	for range 10 {
		slow.measured(10, time.Second) // 10 events/s
	}
	for _, tc := range []struct {
		name   string
		queue  []*ingestJob
		events int
		want   string
	}{
		{"empty queue", nil, maxQueuedEvents + 1, ""},
		{"short queue at a slow pace", jobs(7, 1), 1, ""},
		{"two groups' worth at a slow pace", jobs(2, maxGroupEvents-1), 1, ""},
		{"too many deliveries", jobs(8, 1), 1, domain.OverloadQueueFull},
		{"past the floor at a slow pace", jobs(2, maxGroupEvents), 1, domain.OverloadBudget},
		{"past the memory bound", jobs(1, maxQueuedEvents), 1, domain.OverloadMemory},
	} {
		err := w.admit(&slow, tc.queue, tc.events, in3s, true)
		if got := domain.OverloadReason(err); got != tc.want || (err != nil) != (tc.want != "") {
			t.Errorf("%s: %v (reason %q), want reason %q", tc.name, err, got, tc.want)
		}
		if err != nil && domain.ErrorCode(err) != domain.EUNAVAILABLE {
			t.Errorf("%s: code %s, want %s", tc.name, domain.ErrorCode(err), domain.EUNAVAILABLE)
		}
	}
}

// TestTakeGroup: a group is at least one delivery, then as many as fit
// its bounds, in arrival order.
func TestTakeGroup(t *testing.T) {
	t.Parallel()
	jobs := func(events ...int) []*ingestJob {
		var js []*ingestJob
		for _, n := range events {
			js = append(js, &ingestJob{events: make([]domain.Event, n)})
		}
		return js
	}
	for _, tc := range []struct {
		name    string
		pending []*ingestJob
		want    []int // the sizes of the groups taken, in order
	}{
		{"one group", jobs(1, 2, 3), []int{3}},
		{"a delivery over the events' bound goes alone", jobs(1, maxGroupEvents+1, 1), []int{1, 1, 1}},
		{"up to the events' bound", jobs(maxGroupEvents-1, 1, 1), []int{2, 1}},
		{"up to the deliveries' bound", jobs(slices.Repeat([]int{1}, maxGroupDeliveries+1)...), []int{maxGroupDeliveries, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q groupQueues
			for _, job := range tc.pending {
				q.enqueue(job)
			}
			var got []int
			for {
				group := q.takeGroup(0)
				if len(group) == 0 {
					break
				}
				if group[0] != tc.pending[sum(got)] {
					t.Fatalf("group %d does not start with the next delivery in arrival order", len(got))
				}
				got = append(got, len(group))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("groups of %v deliveries, want %v", got, tc.want)
			}
			if len(q.lanes) != 0 || len(q.pending) != 0 {
				t.Fatalf("an empty lane is kept: %d lanes, %d tenants waiting", len(q.lanes), len(q.pending))
			}
		})
	}
}

// TestLaneTakesTenantsInTurn: a lane's group takes one delivery of each
// waiting tenant in turn, so a tenant that queued a thousand deliveries
// gets its share of each group and a tenant that arrives behind it is in
// the very next group; each tenant's deliveries stay in arrival order.
func TestLaneTakesTenantsInTurn(t *testing.T) {
	t.Parallel()
	var q groupQueues
	job := func(tenantID int64, n int) *ingestJob {
		return &ingestJob{p: domain.ProviderEndpoint{Provider: domain.Provider{TenantID: tenantID}},
			d: domain.Delivery{ID: fmt.Sprint(tenantID, "-", n)}, events: make([]domain.Event, 1)}
	}
	for n := range 1000 {
		q.enqueue(job(1, n)) // the flood
	}
	for n := range 3 {
		q.enqueue(job(2, n))
	}
	first := q.takeGroup(0)
	q.enqueue(job(3, 0)) // arrives while the first group is written
	second := q.takeGroup(0)
	count := func(group []*ingestJob) map[int64]int {
		n := map[int64]int{}
		for _, j := range group {
			n[j.p.TenantID]++
		}
		return n
	}
	if got := count(first); got[2] != 3 || got[1] != maxGroupDeliveries-3 {
		t.Errorf("first group: %v deliveries by tenant, want tenant 2's three and the flood's rest", got)
	}
	if got := count(second); got[3] != 1 {
		t.Errorf("second group: %v deliveries by tenant, want tenant 3's delivery in it", got)
	}
	last := map[int64]int{}
	for _, group := range [][]*ingestJob{first, second} {
		for _, j := range group {
			var tenant, n int
			fmt.Sscanf(j.d.ID, "%d-%d", &tenant, &n)
			if prev, seen := last[int64(tenant)]; seen && n != prev+1 {
				t.Fatalf("tenant %d: delivery %d after %d", tenant, n, prev)
			}
			last[int64(tenant)] = n
		}
	}
}

func sum(ns []int) int {
	s := 0
	for _, n := range ns {
		s += n
	}
	return s
}
