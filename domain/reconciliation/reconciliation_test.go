package reconciliation_test

import (
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/reconciliation"
)

func TestReconciliationDue(t *testing.T) {
	t.Parallel()
	at := func(day, hour, minute int) time.Time { return time.Date(2031, 5, day, hour, minute, 0, 0, time.UTC) }
	cases := []struct {
		name      string
		last, now time.Time
		due       bool
	}{
		{"never ran", time.Time{}, at(6, 14, 0), true},
		{"ran tonight", at(6, 3, 1), at(6, 14, 0), false},
		{"ran yesterday, before tonight's hour", at(5, 3, 1), at(6, 2, 59), false},
		{"ran yesterday, tonight's hour came", at(5, 3, 1), at(6, 3, 0), true},
		{"ran by hand in the afternoon", at(5, 16, 0), at(6, 3, 15), true},
		{"ran by hand after tonight's run", at(6, 9, 0), at(6, 23, 0), false},
		{"missed nights", at(1, 3, 0), at(6, 12, 0), true},
		{"another zone, same instant", at(6, 3, 1).In(time.FixedZone("X", -8*3600)), at(6, 14, 0), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := reconciliation.Due(c.last, c.now); got != c.due {
				t.Fatalf("ReconciliationDue(%s, %s) = %v, want %v", c.last, c.now, got, c.due)
			}
		})
	}
}

func TestReconciliationReportText(t *testing.T) {
	t.Parallel()
	v := reconciliation.Violation{Invariant: reconciliation.InvariantIdempotency, Tenant: "acme", Provider: "crm", ObjectType: "contact",
		ObjectID: "c-1", Subject: "event e7 (contact.snapshot)", Detail: "applied twice"}
	if got, want := v.String(), "idempotency: tenant acme, provider crm, contact/c-1, event e7 (contact.snapshot): applied twice"; got != want {
		t.Errorf("violation %q, want %q", got, want)
	}
	if ref, ok := v.Record(); !ok || ref != (domain.RecordRef{Provider: "crm", ObjectType: "contact", ObjectID: "c-1"}) {
		t.Errorf("record %+v, %v", ref, ok)
	}
	person := reconciliation.Violation{Invariant: reconciliation.InvariantDuplicatePerson, Tenant: "acme", Subject: "email a@b.c", Detail: "people 1, 2"}
	if _, ok := person.Record(); ok || person.String() != "duplicate_person: tenant acme, email a@b.c: people 1, 2" {
		t.Errorf("person %q", person)
	}
	for _, c := range []struct {
		r    reconciliation.Report
		want string
	}{
		{reconciliation.Report{Counts: map[reconciliation.Invariant]int64{reconciliation.InvariantIdempotency: 0}},
			"no violations of the 8 invariants (every tenant)"},
		{reconciliation.Report{Tenant: "acme", Counts: map[reconciliation.Invariant]int64{reconciliation.InvariantDuplicatePerson: 1}},
			"1 violation (duplicate_person 1) of the 8 invariants (tenant acme)"},
		{reconciliation.Report{Counts: map[reconciliation.Invariant]int64{reconciliation.InvariantDuplicatePerson: 2, reconciliation.InvariantRecordRevision: 1}},
			"3 violations (record_revision 1, duplicate_person 2) of the 8 invariants (every tenant)"},
	} {
		if got := c.r.Summary(); got != c.want {
			t.Errorf("summary %q, want %q", got, c.want)
		}
	}
}

func TestValidateHistoryRetention(t *testing.T) {
	t.Parallel()
	if err := domain.ValidateHistoryRetention(7 * 24 * time.Hour); err != nil {
		t.Fatal(err)
	}
	err := domain.ValidateHistoryRetention(72 * time.Hour)
	if want := "history retention must be at least 7 days (168h), got 72h; pass a longer --history-retention"; domain.ErrorCode(err) != domain.EINVALID || domain.ErrorMessage(err) != want {
		t.Fatalf("72h: %v", err)
	}
}
