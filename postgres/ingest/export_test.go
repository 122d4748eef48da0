package ingest

import (
	"context"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// What the external tests (package ingest_test) reach inside a Writer.

var (
	OutcomeSQL     = ingestStatements[stOutcome].SQL
	EnsureScopeSQL = ensureScopeSQL.SQL
)

// SetBeforeCommit appends sql to every ingest transaction, after all of its
// work and before it commits ("" for none).
func (w *Writer) SetBeforeCommit(sql string) { w.beforeCommitSQL = sql }

func (w *Writer) SetMaxQueued(n int) { w.maxQueued = n }

// SetWithoutChanges leaves the changes statement out of every transaction,
// for the benchmark of its cost.
func (w *Writer) SetWithoutChanges(without bool) { w.withoutChanges = without }

func (w *Writer) SetCounterShards(n int) { w.counterShards = n }

// SetListenRetry sets the listener's first reconnection delay (0: the
// default).
func (w *Writer) SetListenRetry(d time.Duration) { w.endpoints.retryMin = d }

// Queued is how many of the tenant's deliveries wait for its committer.
func (w *Writer) Queued(tenantID int64) int {
	w.groups.mu.Lock()
	defer w.groups.mu.Unlock()
	return len(w.groups.pending[tenantID])
}

// CacheState is the endpoint cache's state: live, its listener's backend
// and the notifications handled.
func (w *Writer) CacheState() (live bool, pid uint32, invalidations uint64) {
	return w.endpoints.state()
}

// IngestAlone is Ingest writing each delivery in a transaction of its own.
func (w *Writer) IngestAlone(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event) ([]domain.Result, error) {
	return w.write(ctx, alone, d, p, events, nil)
}

// Job is a delivery as the committer receives it.
type Job = ingestJob

// NewJob is a delivery of events, whose scopes it creates, as the committer
// receives it.
func (w *Writer) NewJob(ctx context.Context, d domain.Delivery, p domain.ProviderEndpoint, events []domain.Event) (*Job, error) {
	if err := w.distributed(ctx); err != nil {
		return nil, err
	}
	if err := w.ensureScopes(ctx, p, events); err != nil {
		return nil, err
	}
	return &ingestJob{ctx: ctx, d: d, p: p, events: events, done: make(chan error, 1)}, nil
}

// CommitGroup writes jobs as one group, as the committer does with
// deliveries that arrive together, and returns each one's error.
func (w *Writer) CommitGroup(jobs ...*Job) []error {
	w.commitGroup(jobs)
	errs := make([]error, len(jobs))
	for i, job := range jobs {
		errs[i] = <-job.done
	}
	return errs
}

func (j *Job) Results() []domain.Result { return j.results }

// Committing reports whether any lane's committer runs.
func (w *Writer) Committing() bool {
	w.groups.mu.Lock()
	defer w.groups.mu.Unlock()
	return len(w.groups.lanes) > 0
}

// SetLaneLockWait bounds the lock waits of a lane's groups (0: none).
func (w *Writer) SetLaneLockWait(d time.Duration) { w.laneLockWait = d }

// SetLanes sets the number of lanes the tenants are spread over.
func (w *Writer) SetLanes(n int) { w.lanes = n }

// EndpointSQL is the statement that reads an endpoint once its tenant's
// id is known.
const EndpointSQL = endpointSQL

// StoredInCommon and OwnInCommon, for TestCommonFieldsAgree.
const (
	StoredInCommon = storedInCommon
	OwnInCommon    = ownInCommon
)
