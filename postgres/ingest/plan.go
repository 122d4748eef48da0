package ingest

import (
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// A group's events are written in rounds. An event joins the first round
// after every earlier event of the group it shares an idempotency key, a
// record or a lead lock with; events that share nothing cannot see each
// other's writes, so each round is written by a statement per step
// (claim and apply, then outcome) instead of one per event, and every event's
// outcome is what it would be were the events written one at a time, in
// arrival order.

// roundEvent is one event of a group on its way into a round.
type roundEvent struct {
	job        *ingestJob
	n          int // index in job.events
	e          domain.Event
	key        []byte // nil for a rejected event, which claims nothing
	identifier string
	ttl        time.Duration
}

// step is one statement of a group's transaction with its arguments. A
// round's outcome step also carries the round, whose results it returns.
type step struct {
	stmt  stmtID
	args  pgx.NamedArgs
	round []roundEvent
}

// decides reports whether s is a round's outcome statement, which answers
// the round's outcomes.
func (s step) decides() bool { return s.stmt == stOutcome || s.stmt == stReplayOutcome }

// plan is the transaction of a group of deliveries, of one tenant or of
// several (a lane's, committer.go), in arrival order: generic plans, the
// delivery rows, then the steps of each round, counting from counter shard
// shard on (of shards), its lock waits and statements bounded as b says. Tenants share no rows, so their events mix in the
// same rounds and statements, each row carrying its tenant. It only
// computes; exec.go queues the steps.
func plan(group []*ingestJob, shard, shards int, b bounds) []step {
	var events []roundEvent
	var deliveries deliveryRows
	for _, job := range group {
		d := job.d
		d.TenantID, d.ProviderID = job.p.TenantID, job.p.ID
		deliveries.add(d, len(job.events))
		for n, e := range job.events {
			events = append(events, prepared(job, n, e))
		}
	}
	args := pgx.NamedArgs{}
	deliveries.set(args)
	steps := []step{{stmt: stGenericPlans, args: boundArgs(b)}, {stmt: stDeliveries, args: args}}
	// The group's only tenant on Citus, which its statements filter by
	// (statements.go).
	tenant := group[0].p.TenantID
	for r, round := range inRounds(events) {
		steps = append(steps, roundSteps(tenant, round, (shard+r)%shards)...)
	}
	if d := group[0].d; len(group) == 1 && d.ReplayOf != "" && !d.ReplayOfAt.IsZero() {
		asReplay(steps, d)
	}
	// Last: it takes the tenants' change positions, whose locks are held
	// until commit (changes.go).
	if args, ok := changeArgs(tenant, events); ok {
		steps = append(steps, step{stmt: stChanges, args: args})
	}
	return steps
}

// asReplay makes the outcome steps of replay d log what its events share
// with its original's by reference (replayOutcomeSQL).
func asReplay(steps []step, d domain.Delivery) {
	for i := range steps {
		if s := &steps[i]; s.stmt == stOutcome {
			s.stmt = stReplayOutcome
			s.args["replay_of"], s.args["replay_of_at"] = d.ReplayOf, d.ReplayOfAt
		}
	}
}

// prepared is the n-th event of job, rejected if its scope is disabled,
// with its idempotency key.
func prepared(job *ingestJob, n int, e domain.Event) roundEvent {
	scope := job.p.Scope(e.Scope)
	if e.RejectReason == "" && !scope.Enabled {
		e.RejectReason = fmt.Sprintf("scope %s is disabled for this provider", e.Scope)
	}
	ev := roundEvent{job: job, n: n, e: e, ttl: scope.TTL}
	if e.RejectReason == "" {
		ev.identifier = scope.IdentifierRule.Identifier(e)
		ev.key = domain.IdempotencyKey(job.p.TenantID, job.p.ID, e.Scope, ev.identifier)
	}
	return ev
}

// lead is the event's lead signup, nil for other and rejected events.
func (ev roundEvent) lead() *domain.Lead {
	if ev.e.RejectReason != "" {
		return nil
	}
	return ev.e.Lead
}

// shared names what the event's statements read or write that another
// event's could too: its idempotency key, its record and its lead locks,
// each within its tenant.
func (ev roundEvent) shared() []string {
	tenantID := ev.job.p.TenantID
	tenant := strconv.FormatInt(tenantID, 10) + "\x00"
	var names []string
	if ev.key != nil {
		names = append(names, tenant+"key\x00"+string(ev.key))
	}
	if ev.e.ObjectID != "" {
		names = append(names, tenant+"record\x00"+strconv.FormatInt(ev.job.p.ID, 10)+"\x00"+ev.e.Scope.ObjectType+"\x00"+ev.e.ObjectID)
	}
	if l := ev.lead(); l != nil {
		for _, k := range domain.LeadLockKeys(tenantID, *l) {
			names = append(names, "lead\x00"+strconv.FormatInt(k, 10))
		}
	}
	return names
}

// inRounds splits events, in arrival order, into rounds: each event goes
// to the first round after those of the earlier events it shares anything
// with.
func inRounds(events []roundEvent) [][]roundEvent {
	var rounds [][]roundEvent
	free := map[string]int{} // the first round in which a name is free
	for _, ev := range events {
		names := ev.shared()
		r := 0
		for _, name := range names {
			r = max(r, free[name])
		}
		for _, name := range names {
			free[name] = r + 1
		}
		if r == len(rounds) {
			rounds = append(rounds, nil)
		}
		rounds[r] = append(rounds[r], ev)
	}
	return rounds
}

// roundSteps are the statements of one round: the claim and the guarded
// upserts in one statement when the round has no lead signup, else the
// claim, each signup's locks and find-or-create, and the guards; then the
// outcome statement.
func roundSteps(tenant int64, round []roundEvent, shard int) []step {
	args := roundArgs(tenant, round, shard)
	var claims, leads, wholes, properties bool
	for _, ev := range round {
		claims = claims || ev.key != nil
		leads = leads || ev.lead() != nil
		if ev.key != nil && ev.lead() == nil && ev.e.Revision != nil {
			wholes = wholes || ev.e.Property == ""
			properties = properties || ev.e.Property != ""
		}
	}
	var steps []step
	add := func(st stmtID) { steps = append(steps, step{stmt: st, args: args}) }
	switch {
	case !leads && wholes && properties:
		add(stClaimApplyBoth)
	case !leads && wholes:
		add(stClaimApply)
	case !leads && properties:
		add(stClaimApplyProperty)
	default:
		if claims {
			add(stClaim)
		}
		for _, ev := range round {
			if l := ev.lead(); l != nil {
				for _, k := range domain.LeadLockKeys(ev.job.p.TenantID, *l) {
					steps = append(steps, step{stmt: stLeadLock, args: pgx.NamedArgs{"key": k}})
				}
				steps = append(steps, step{stmt: stLead, args: leadArgs(ev)})
			}
		}
		if wholes {
			add(stApply)
		}
		if properties {
			add(stApplyProperty)
		}
	}
	return append(steps, step{stmt: stOutcome, args: args, round: round})
}

// roundArgs are the parameters of a round's statements: one array per
// column of eventRows, in round order, and the group's first tenant (its
// only one on Citus).
func roundArgs(tenant int64, round []roundEvent, shard int) pgx.NamedArgs {
	n := len(round)
	var (
		tenantID    = make([]int64, n)
		providerID  = make([]int64, n)
		deliveryID  = make([]string, n)
		seq         = make([]int32, n)
		now         = make([]time.Time, n)
		objectType  = make([]string, n)
		action      = make([]string, n)
		eventID     = make([]string, n)
		objectID    = make([]*string, n)
		revision    = make([]*int64, n)
		snapshot    = make([]*string, n)
		payload     = make([][]byte, n)
		reject      = make([]*string, n)
		key         = make([][]byte, n)
		identifier  = make([]string, n)
		ttl         = make([]float64, n)
		property    = make([]*string, n)
		revisionAt  = make([]*time.Time, n)
		maxSkew     = make([]float64, n)
		leadSignups = make([]bool, n)
	)
	var latest time.Time
	for i, ev := range round {
		e, d, p := ev.e, ev.job.d, ev.job.p
		if d.ReceivedAt.After(latest) {
			latest = d.ReceivedAt
		}
		tenantID[i], providerID[i], deliveryID[i], seq[i], now[i] = p.TenantID, p.ID, d.ID, int32(e.Seq), d.ReceivedAt
		objectType[i], action[i], eventID[i] = e.Scope.ObjectType, e.Scope.Action, e.EventID
		objectID[i], revision[i], snapshot[i], payload[i] = pg.NullString(e.ObjectID), e.Revision, pg.NullJSON(e.Snapshot), e.Payload
		reject[i], key[i], identifier[i], ttl[i] = pg.NullString(e.RejectReason), ev.key, ev.identifier, ev.ttl.Seconds()
		property[i], maxSkew[i], leadSignups[i] = pg.NullString(e.Property), p.MaxFutureSkew.Seconds(), ev.lead() != nil
		if e.Revision != nil && !e.RevisionTime.IsZero() && e.RejectReason == "" {
			at := e.RevisionTime
			if at.After(pg.LatestRevisionTime) {
				at = pg.LatestRevisionTime // later than PostgreSQL holds, and as surely too far ahead
			}
			revisionAt[i] = &at
		}
	}
	return pgx.NamedArgs{
		"tenant": tenant, "tenant_id": tenantID, "shard": shard, "provider_id": providerID, "delivery_id": deliveryID, "seq": seq,
		"now": now, "object_type": objectType, "action": action, "event_id": eventID, "object_id": objectID,
		"revision": revision, "snapshot": snapshot, "payload": payload, "reject_reason": reject, "key": key,
		"identifier": identifier, "ttl": ttl, "property": property, "revision_at": revisionAt,
		"max_skew": maxSkew, "lead": leadSignups, "latest": latest,
	}
}

// leadArgs are the parameters of leadSQL for a lead signup event.
func leadArgs(ev roundEvent) pgx.NamedArgs {
	l := ev.e.Lead
	return pgx.NamedArgs{
		"tenant_id": ev.job.p.TenantID, "key": ev.key, "delivery_id": ev.job.d.ID, "seq": ev.e.Seq, "now": ev.job.d.ReceivedAt,
		"email": l.Email, "name": pg.NullString(l.Name), "company": pg.NullString(l.Company), "domain": pg.NullString(l.Domain),
		"campaign": l.Campaign, "source": pg.NullString(l.Source),
	}
}
