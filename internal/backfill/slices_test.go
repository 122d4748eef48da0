package backfill_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/backfill"
	"github.com/tidemark/tidemark/internal/pull/salesforce/salesforcetest"
	"github.com/tidemark/tidemark/postgres"
)

// salesforceProvider connects provider sf of tenant to org: a first
// outbound message creates its contact scope, and its API credentials are
// the org's.
func salesforceProvider(t *testing.T, store *postgres.Store, ctx context.Context, tenant domain.Tenant, org *salesforcetest.Server) {
	t.Helper()
	p, err := store.ConnectProvider(ctx, tenant.ID, "sf", "salesforce", "", map[string]string{"org_id": "00D000000000001AAA"})
	if err != nil {
		t.Fatal(err)
	}
	ep, err := store.Endpoint(ctx, tenant.Slug, "sf")
	if err != nil {
		t.Fatal(err)
	}
	rev := int64(1)
	snapshot, _ := json.Marshal(map[string]any{"Id": "003000000000999"})
	webhook := domain.Event{EventID: "00D000000000001AAA:04l000000000999", Scope: domain.ScopeName{ObjectType: "contact", Action: "outbound"},
		ObjectID: "003000000000999", Revision: &rev, RevisionTime: time.UnixMilli(1), Snapshot: snapshot, Payload: []byte("<Notification/>")}
	d := domain.Delivery{ID: uuid.Must(uuid.NewV7()).String(), TenantID: tenant.ID, ProviderID: ep.ID, ReceivedAt: time.Now(),
		Status: 200, Signature: domain.SignatureValid}
	if _, err := store.Ingest(ctx, d, ep, []domain.Event{webhook}); err != nil {
		t.Fatal(err)
	}
	if err := store.SetAPICredentials(ctx, tenant.ID, p.ID, org.Credentials()); err != nil {
		t.Fatal(err)
	}
}

// startSF queues an operator's backfill of tenant's provider sf over
// [from, to).
func startSF(t *testing.T, store *postgres.Store, ctx context.Context, tenant domain.Tenant, from, to time.Time) pull.Job {
	t.Helper()
	p, err := store.ProviderSummary(ctx, tenant.ID, "sf")
	if err != nil {
		t.Fatal(err)
	}
	job, err := store.StartBackfill(ctx, tenant.ID, p.ID, from, to, "", false)
	if err != nil {
		t.Fatal(err)
	}
	return job
}

// TestEndlessSourceHoldsNoNode (review 4 M4): acme's owner points the
// Salesforce login URL at an org whose query pages never end, and queues a
// backfill first. globex's backfill, queued after it, still finishes on
// the one node: acme's job gives the node back after its slice, and the
// next claim is globex's turn.
func TestEndlessSourceHoldsNoNode(t *testing.T) {
	t.Parallel()
	store, ctx, acme := setup(t)
	globex, err := store.CreateTenant(ctx, "globex", "")
	if err != nil {
		t.Fatal(err)
	}
	hostile, honest := salesforcetest.New(t), salesforcetest.New(t)
	now := time.Now()
	hostile.Put("Contact", "003000000000001", now.Add(-30*time.Minute), map[string]any{"Email": "x@example.com"})
	hostile.Endless = true
	honest.Put("Contact", "003000000000002", now.Add(-20*time.Minute), map[string]any{"Email": "ann@example.com"})
	salesforceProvider(t, store, ctx, acme, hostile)
	salesforceProvider(t, store, ctx, globex, honest)
	endless := startSF(t, store, ctx, acme, now.Add(-time.Hour), now)
	job := startSF(t, store, ctx, globex, now.Add(-time.Hour), now)

	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	jobs := backfill.NewJobs(store, log)
	node, stop := context.WithTimeout(context.Background(), 90*time.Second) // past a slice's minute
	defer stop()
	for node.Err() == nil {
		if _, err := jobs.RunNext(node); err != nil && node.Err() == nil {
			t.Fatal(err)
		}
		if job, err = store.Backfill(ctx, globex.ID, job.ID); err != nil {
			t.Fatal(err)
		}
		if job.Ended() {
			break
		}
	}
	if job.State != pull.Done || job.Missed != 1 {
		t.Fatalf("globex's backfill is %s (%d missed) after 90 s on a node behind acme's endless one, want done with 1 missed",
			job.State, job.Missed)
	}
	endless, err = store.Backfill(ctx, acme.ID, endless.ID)
	if err != nil || endless.Ended() || endless.Events == 0 {
		t.Fatalf("acme's endless backfill: %+v %v, want pulled from and not ended", endless, err)
	}
}

// TestJobPastItsBoundFails: an endless source runs slice after slice until
// the job's total bound, then the job fails saying which bound it passed,
// with what it wrote counted.
func TestJobPastItsBoundFails(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		slice, max backfill.Budget
		want       string
	}{
		{"pages", backfill.Budget{Pages: 3, Time: time.Minute}, backfill.Budget{Pages: 10, Time: time.Hour},
			"stopped after 10 pages, the most a backfill job may pull, having written what it read: start backfills of shorter windows"},
		{"time", backfill.Budget{Pages: 1000, Time: 300 * time.Millisecond}, backfill.Budget{Pages: 100000, Time: time.Second},
			"stopped after running for 1s, the longest a backfill job may run, having written what it read"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			store, ctx, acme := setup(t)
			org := salesforcetest.New(t)
			now := time.Now()
			org.Put("Contact", "003000000000001", now.Add(-30*time.Minute), map[string]any{"Email": "x@example.com"})
			org.Endless = true
			salesforceProvider(t, store, ctx, acme, org)
			job := startSF(t, store, ctx, acme, now.Add(-time.Hour), now)
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			jobs := backfill.NewJobs(store, log)
			jobs.Slice, jobs.Max = c.slice, c.max
			slices := 0
			for !job.Ended() && slices < 100 {
				if _, err := jobs.RunNext(context.Background()); err != nil {
					t.Fatal(err)
				}
				slices++
				job, _ = store.Backfill(ctx, acme.ID, job.ID)
			}
			if job.State != pull.Failed || !strings.Contains(job.Error, c.want) || slices < 2 || job.Events == 0 {
				t.Fatalf("after %d slices: %s %q (%d events, ran %s), want failed in several slices saying %q", slices, job.State, job.Error, job.Events, job.RanFor, c.want)
			}
			if c.name == "pages" && job.Pages != 10 {
				t.Errorf("pages %d, want 10: the last slice ends at the bound", job.Pages)
			}
		})
	}
}

// TestSlicedJobMissesNothing: a job larger than a slice runs in several,
// each resuming where the previous one stopped, and finds every record the
// webhooks missed once: its counts add up over the slices.
func TestSlicedJobMissesNothing(t *testing.T) {
	t.Parallel()
	store, ctx, acme := setup(t)
	org := salesforcetest.New(t)
	now := time.Now().Truncate(time.Second)
	from := now.Add(-8 * time.Hour)
	const contacts = 9
	for i := range contacts {
		org.Put("Contact", "00300000000010"+string(rune('0'+i)), from.Add(time.Duration(i)*50*time.Minute+time.Minute),
			map[string]any{"Email": "c" + string(rune('0'+i)) + "@example.com"})
	}
	org.Delete("Contact", "003000000000100", from.Add(7*time.Hour))
	salesforceProvider(t, store, ctx, acme, org)
	job := startSF(t, store, ctx, acme, from, now)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	jobs := backfill.NewJobs(store, log)
	jobs.Slice = backfill.Budget{Pages: 2, Time: time.Minute} // the org's pages hold 2 records
	slices := 0
	for !job.Ended() && slices < 50 {
		if _, err := jobs.RunNext(context.Background()); err != nil {
			t.Fatal(err)
		}
		slices++
		job, _ = store.Backfill(ctx, acme.ID, job.ID)
		if !job.Ended() && (job.State != pull.Queued || job.Pages == 0) {
			t.Fatalf("after slice %d: %+v, want queued again with its pages counted", slices, job)
		}
	}
	// 8 contacts and a deletion of the ninth, each applied once.
	if job.State != pull.Done || job.Missed != contacts || slices < 3 {
		t.Fatalf("after %d slices: %s, %d missed (%v), want done in several slices with %d missed", slices, job.State, job.Missed, job.Outcomes, contacts)
	}
	t.Logf("done in %d slices of at most 2 pages: %d pages, outcomes %v", slices, job.Pages, job.Outcomes)
	var stored int
	if err := store.Pool().QueryRow(ctx, `SELECT count(*) FROM records WHERE tenant_id = $1 AND object_id LIKE '0030000000001%' AND deleted_revision IS NULL`,
		acme.ID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != contacts-1 {
		t.Errorf("%d contacts stored, want %d", stored, contacts-1)
	}
}
