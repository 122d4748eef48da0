// Package reconciliation names what a reconciliation checks: that what
// Tidemark stores agrees with itself, the invariants its guarantees rest
// on, each one a query over the stored data (`tidemark audit`, and nightly
// in serve); it compares only what retention keeps. Its violations, its
// reports and the service that runs and keeps them.
package reconciliation

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// Invariant names one checked rule; it is the label of the
// tidemark_audit_violations metric.
type Invariant string

// The invariants, in report order.
const (
	InvariantRecordRevision   Invariant = "record_revision"
	InvariantRecordSnapshot   Invariant = "record_snapshot"
	InvariantApplicationCount Invariant = "application_count"
	InvariantIdempotency      Invariant = "idempotency"
	InvariantOutcomeCounters  Invariant = "outcome_counters"
	InvariantConflictRecord   Invariant = "conflict_record"
	InvariantDuplicatePerson  Invariant = "duplicate_person"
	InvariantDuplicateAccount Invariant = "duplicate_account"
)

// Invariants lists every invariant in report order.
var Invariants = []Invariant{InvariantRecordRevision, InvariantRecordSnapshot, InvariantApplicationCount,
	InvariantIdempotency, InvariantOutcomeCounters, InvariantConflictRecord, InvariantDuplicatePerson,
	InvariantDuplicateAccount}

// Description says in one sentence what the invariant holds.
func (i Invariant) Description() string {
	switch i {
	case InvariantRecordRevision:
		return "A record's revision is its highest accepted revision (per property for property changes), and its deletion the highest accepted one."
	case InvariantRecordSnapshot:
		return "A record's snapshot is the snapshot of that revision (for property changes, each property's value is that of its highest accepted revision)."
	case InvariantApplicationCount:
		return "A record's application count is the number of its accepted revisions, those removed by history retention included."
	case InvariantIdempotency:
		return "No two applied events share an idempotency key within the key's TTL."
	case InvariantOutcomeCounters:
		return "The outcome counters equal the event log's counts for every closed hour still in the log."
	case InvariantConflictRecord:
		return "Every open revision conflict names a record that exists."
	case InvariantDuplicatePerson:
		return "No two people of a tenant share an email address, whatever its case or surrounding spaces."
	case InvariantDuplicateAccount:
		return "No two accounts of a tenant share a domain, whatever its case or surrounding spaces."
	}
	return string(i)
}

// Violation is one breach of an invariant, named by the ids an operator
// looks it up with.
type Violation struct {
	Invariant  Invariant `json:"invariant"`
	Tenant     string    `json:"tenant"`                // the tenant's slug
	Provider   string    `json:"provider,omitempty"`    // the provider's name, when one is concerned
	ObjectType string    `json:"object_type,omitempty"` // the record concerned, if any
	ObjectID   string    `json:"object_id,omitempty"`
	Subject    string    `json:"subject,omitempty"` // what else is concerned: an event, a conflict, an hour, an email
	Detail     string    `json:"detail"`            // the values that disagree, with revisions and event ids
}

// Record names the violation's record, when it concerns one.
func (v Violation) Record() (domain.RecordRef, bool) {
	return domain.RecordRef{Provider: v.Provider, ObjectType: v.ObjectType, ObjectID: v.ObjectID}, v.ObjectType != ""
}

func (v Violation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: tenant %s", v.Invariant, v.Tenant)
	if v.Provider != "" {
		fmt.Fprintf(&b, ", provider %s", v.Provider)
	}
	if v.ObjectType != "" {
		fmt.Fprintf(&b, ", %s/%s", v.ObjectType, v.ObjectID)
	}
	if v.Subject != "" {
		fmt.Fprintf(&b, ", %s", v.Subject)
	}
	fmt.Fprintf(&b, ": %s", v.Detail)
	return b.String()
}

// Report is the result of one run.
type Report struct {
	Tenant     string // the tenant checked; "" when every tenant was
	StartedAt  time.Time
	FinishedAt time.Time
	Counts     map[Invariant]int64 // violations of every invariant, zeros included
	// Violations are the first ones of each invariant (all of them, or up to
	// the limit the run was given), in Invariants order.
	Violations []Violation
}

// Total is the number of violations of every invariant.
func (r Report) Total() int64 {
	var n int64
	for _, c := range r.Counts {
		n += c
	}
	return n
}

// Summary is the report in one line: the total, and the count of each
// invariant that has violations.
func (r Report) Summary() string {
	scope := "every tenant"
	if r.Tenant != "" {
		scope = "tenant " + r.Tenant
	}
	total := r.Total()
	if total == 0 {
		return fmt.Sprintf("no violations of the %d invariants (%s)", len(Invariants), scope)
	}
	var parts []string
	for _, i := range Invariants {
		if n := r.Counts[i]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", i, n))
		}
	}
	noun := "violations"
	if total == 1 {
		noun = "violation"
	}
	return fmt.Sprintf("%d %s (%s) of the %d invariants (%s)", total, noun, strings.Join(parts, ", "), len(Invariants), scope)
}

// StoredViolations is how many violations of each invariant a stored report
// keeps; its counts are complete.
const StoredViolations = 20

// Hour is the hour (UTC) from which serve runs the nightly
// reconciliation.
const Hour = 3

// Due reports whether a nightly run is due at now, given when
// the last stored report was made (zero: never): when no report was made
// since the last Hour o'clock (UTC) at or before now. A node
// that was down at that hour runs it when it next checks.
func Due(last, now time.Time) bool {
	now = now.UTC()
	night := time.Date(now.Year(), now.Month(), now.Day(), Hour, 0, 0, 0, time.UTC)
	if now.Before(night) {
		night = night.AddDate(0, 0, -1)
	}
	return last.Before(night)
}

// Service runs reconciliation and serves its last stored
// report.
type Service interface {
	// Reconcile checks every invariant for one tenant (tenantID 0: every
	// tenant) and returns up to limit violations of each (0: all of them)
	// with the complete counts. It stores nothing.
	Reconcile(ctx context.Context, tenantID int64, limit int) (Report, error)
	// LastReconciliation returns the newest stored report, or an ENOTFOUND
	// error when no run has stored one yet.
	LastReconciliation(ctx context.Context) (Report, error)
	// RunReconciliation checks every tenant now, as tidemark audit does,
	// and stores the report with an AuditReconciliationRun entry naming
	// the actor of ctx. It is an ECONFLICT error while another run (the
	// nightly one, another node's) is under way.
	RunReconciliation(ctx context.Context) (Report, error)
}
