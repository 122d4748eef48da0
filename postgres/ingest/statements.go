package ingest

import (
	"math/rand/v2"
	"regexp"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// The statements of an ingest transaction, in one registry: the planner
// (plan.go) names them by stmtID, PrepareIngest prepares every one of them
// but the lazy ones, and the golden test prints each whole to
// testdata/<name>.sql. A new statement is added here and nowhere else.

// stmtID names a statement of the registry.
type stmtID int

const (
	stGenericPlans stmtID = iota
	stDeliveries
	stClaim
	stClaimApply
	stClaimApplyProperty
	stClaimApplyBoth
	stApply
	stApplyProperty
	stOutcome
	stLeadLock
	stLead
	stChanges
	stReplayOutcome
	numStatements
)

// statement is one ingest statement.
type statement struct {
	name string // its constant's name, and its golden files'
	// postgres and citus are the forms each database is sent (below), with
	// @name parameters.
	postgres, citus string
	pg.Statement                 // postgres, ready to send
	routed          pg.Statement // citus, ready to send
	// idle returns arguments on which it is planned and writes nothing, for
	// PrepareIngest; nil for a statement without parameters.
	idle func() pgx.NamedArgs
	// lazy leaves it out of PrepareIngest: the first transaction that
	// runs it on a connection prepares it.
	lazy bool
}

func newStatement(name, source string, idle func() pgx.NamedArgs) *statement {
	st := &statement{name: name, postgres: source, Statement: pg.Named(source), idle: idle}
	return st.withCitus(joinByTenant.ReplaceAllString(source, "$1.tenant_id = @tenant::bigint"))
}

// withCitus is st with citus as its form for Citus, written for a group of
// one tenant, @tenant.
func (st *statement) withCitus(citus string) *statement {
	st.citus, st.routed = citus, pg.Named(citus)
	return st
}

// The statements are written for a group of any number of tenants, which
// PostgreSQL is sent as they are: every row carries its tenant, and a table
// is joined to a row by it. Citus routes a statement to a tenant's shards
// only when each table is filtered by the tenant as a constant, and a group
// on Citus holds one tenant (lanes.go), so its form filters every join by
// tenant by that one tenant, @tenant, a plain parameter (joinByTenant):
// Citus plans a statement anew for each value of a parameter it routes by.
// Neither form may name the group's tenants as a constant list beside the
// join: PostgreSQL's generic plan then chose the change feed's primary key
// and scanned a tenant's whole feed backwards for each change, and Citus,
// which cannot route by that join, took 600-870 ms a delivery against
// 40-70.
var joinByTenant = regexp.MustCompile(`(\w+)\.tenant_id = \w+\.tenant_id\b`)

// sent is the statement as sent to the database, Citus or not.
func (st *statement) sent(citus bool) pg.Statement {
	if citus {
		return st.routed
	}
	return st.Statement
}

// ingestStatements is the registry, in the order PrepareIngest prepares
// them.
var ingestStatements = [numStatements]*statement{
	stGenericPlans:       newStatement("genericPlansSQL", genericPlansSQL, func() pgx.NamedArgs { return boundArgs(bounds{}) }),
	stDeliveries:         newStatement("deliveriesSQL", deliveriesSQL, noEvents),
	stClaim:              newStatement("claimSQL", claimSQL, noEvents),
	stClaimApply:         newStatement("claimApplySQL", claimApplySQL, noEvents),
	stClaimApplyProperty: newStatement("claimApplyPropertySQL", claimApplyPropertySQL, noEvents),
	stClaimApplyBoth:     newStatement("claimApplyBothSQL", claimApplyBothSQL, noEvents),
	stApply:              newStatement("applySQL", applySQL, noEvents),
	stApplyProperty:      newStatement("applyPropertySQL", applyPropertySQL, noEvents),
	stOutcome:            newStatement("outcomeSQL", outcomeSQL, noEvents),
	// Tenant 0's lock: released with PrepareIngest's rollback.
	// A key of no identity in particular, random so that connections
	// preparing at once do not queue on one lock.
	stLeadLock: newStatement("leadLockSQL", leadLockSQL, func() pgx.NamedArgs { return pgx.NamedArgs{"key": rand.Int64()} }),
	// A lead signup of tenant 0, which has no claim: it writes nothing.
	stLead: newStatement("leadSQL", leadSQL, func() pgx.NamedArgs {
		return pgx.NamedArgs{"tenant_id": int64(0), "key": []byte{}, "delivery_id": nil, "seq": 0, "now": nil,
			"email": "", "name": nil, "company": nil, "domain": nil, "campaign": "", "source": nil}
	}),
	// No event: no change, and the head row is not touched.
	stChanges: newStatement("changesSQL", changesSQL, func() pgx.NamedArgs { args, _ := changeArgs(0, nil); return args }).
		withCitus(changesOneTenantSQL),
	// Replays are rare (replay.ManualPerMinute, one job per tenant):
	// its plan would cost every new connection as much as the outcome
	// statement's, for nothing.
	stReplayOutcome: lazily(newStatement("replayOutcomeSQL", replayOutcomeSQL, nil)),
}

// lazily is st prepared by its first use rather than by PrepareIngest.
func lazily(st *statement) *statement {
	st.lazy = true
	return st
}

// LeadLockSQL takes one advisory lock of a lead signup; erasing a lead
// takes the same lock, so that a signup in flight finishes first.
var LeadLockSQL = ingestStatements[stLeadLock].Statement

// genericPlansSQL makes the rest of the transaction run the ingest
// statements on their generic plans. Their custom plans look cheaper, as
// the planner sees how few events an array holds, so PostgreSQL would plan
// them anew on every call, which costs more than running them; and a custom
// plan prunes no more partitions of the event log than the generic one does
// when it starts. Not on Citus (its catalog pg_dist_partition exists): it
// cannot plan an INSERT ... SELECT on parameters without their values, and
// routes each statement to its tenant's worker from the values anyway.
//
// It also turns JIT compilation off: the statements handle a few rows, and
// on Citus a CTE read back from an intermediate result is estimated at
// 1,000 rows, so a join of two crossed jit_above_cost and the change
// statement spent 170-250 ms compiling (EXPLAIN on a cluster, docs/scale.md).
//
// And it bounds the transaction's lock waits when @lock_timeout is set (a
// lane's group, committer.go) and each of its statements when
// @statement_timeout is (a sender's deadline, bounds.go), else keeps the
// connection's settings.
const genericPlansSQL = `
SELECT set_config('plan_cache_mode',
                  CASE WHEN to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN 'force_generic_plan' ELSE 'auto' END, true),
       set_config('jit', 'off', true),
       set_config('lock_timeout', coalesce(@lock_timeout::text, current_setting('lock_timeout')), true),
       set_config('statement_timeout', coalesce(@statement_timeout::text, current_setting('statement_timeout')), true)`

// boundArgs are genericPlansSQL's parameters for b.
func boundArgs(b bounds) pgx.NamedArgs {
	ms := func(d time.Duration) any {
		if d == 0 {
			return nil
		}
		return strconv.FormatInt(max(d.Milliseconds(), 1), 10) + "ms"
	}
	return pgx.NamedArgs{"lock_timeout": ms(b.lockWait), "statement_timeout": ms(b.statement)}
}

// noEvents are the arguments of a group with no delivery and no event:
// every statement runs on empty arrays.
func noEvents() pgx.NamedArgs {
	args := roundArgs(0, nil, 0)
	var none deliveryRows
	none.set(args)
	return args
}
