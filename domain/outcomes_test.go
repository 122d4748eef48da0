package domain_test

import (
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
)

func TestValidOutcome(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"applied", true}, {"duplicate", true}, {"event_conflict", true}, {"stale", true},
		{"redundant", true}, {"revision_conflict", true}, {"unversioned", true}, {"rejected", true},
		{"delivery_rejected", false}, {"Applied", false}, {"", false}, {"conflict", false},
	} {
		t.Run(tc.s, func(t *testing.T) {
			t.Parallel()
			if got := domain.ValidOutcome(tc.s); got != tc.want {
				t.Errorf("ValidOutcome(%q) = %v", tc.s, got)
			}
		})
	}
}

func TestOutcomeCounts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		counts domain.OutcomeCounts
		events int64
	}{
		{"empty", domain.OutcomeCounts{}, 0},
		{"nil", nil, 0},
		{"every outcome once", func() domain.OutcomeCounts {
			c := domain.OutcomeCounts{}
			for _, o := range domain.Outcomes {
				c[string(o)] = 1
			}
			return c
		}(), int64(len(domain.Outcomes))},
		{"refused deliveries are not events", domain.OutcomeCounts{"applied": 3, domain.DeliveryRejected: 5}, 3},
		{"unknown keys are not events", domain.OutcomeCounts{"stale": 2, "lost": 7}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.counts.Events(); got != tc.events {
				t.Errorf("Events() = %d, want %d", got, tc.events)
			}
		})
	}
}

func TestOverviewTotals(t *testing.T) {
	t.Parallel()
	win := func(applied, rejected int64) domain.OutcomeCounts {
		return domain.OutcomeCounts{"applied": applied, domain.DeliveryRejected: rejected}
	}
	n := len(domain.OverviewWindows)
	for _, tc := range []struct {
		name      string
		providers []domain.ProviderCounts
		applied   int64 // in every window
		rejected  int64
	}{
		{"no providers", nil, 0, 0},
		{"one", []domain.ProviderCounts{{Provider: "crm", Windows: repeat(win(2, 1), n)}}, 2, 1},
		{"two", []domain.ProviderCounts{
			{Provider: "crm", Windows: repeat(win(2, 1), n)},
			{Provider: "billing", Windows: repeat(win(5, 0), n)},
		}, 7, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := make([]domain.OutcomeCounts, len(tc.providers))
			for i, p := range tc.providers {
				before[i] = maps.Clone(p.Windows[0])
			}
			totals := domain.Overview{Providers: tc.providers}.Totals()
			if len(totals) != n {
				t.Fatalf("%d totals, want one per window (%d)", len(totals), n)
			}
			for i, c := range totals {
				if c["applied"] != tc.applied || c[domain.DeliveryRejected] != tc.rejected {
					t.Errorf("window %d: %v", i, c)
				}
			}
			// Totals must not write into the providers' counts.
			for i, p := range tc.providers {
				if !maps.Equal(p.Windows[0], before[i]) {
					t.Errorf("provider %s counts changed: %v", p.Provider, p.Windows[0])
				}
			}
		})
	}
}

func repeat(c domain.OutcomeCounts, n int) []domain.OutcomeCounts {
	out := make([]domain.OutcomeCounts, n)
	for i := range out {
		out[i] = domain.OutcomeCounts{}
		out[i].Add(c)
	}
	return out
}

func TestConflictMovedOn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		current *domain.Record
		want    bool
	}{
		{"record gone", nil, true},
		{"still at the conflict's revision", &domain.Record{Revision: 12}, false},
		{"moved past it", &domain.Record{Revision: 13}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := domain.ConflictDetail{Conflict: domain.Conflict{Revision: 12}, Current: tc.current}
			if got := d.MovedOn(); got != tc.want {
				t.Errorf("MovedOn() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPersonOpenTasks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		tasks []domain.Task
		want  int
	}{
		{"none", nil, 0},
		{"open and done", []domain.Task{{Status: domain.TaskOpen}, {Status: "done"}, {Status: domain.TaskOpen}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := (domain.Person{Tasks: tc.tasks}).OpenTasks(); got != tc.want {
				t.Errorf("OpenTasks() = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	invalid := domain.Errorf(domain.EINVALID, "tenant %q is taken", "acme")
	for _, tc := range []struct {
		name    string
		err     error
		code    string
		message string
	}{
		{"coded", invalid, domain.EINVALID, `tenant "acme" is taken`},
		{"wrapped", fmt.Errorf("create tenant: %w", invalid), domain.EINVALID, `tenant "acme" is taken`},
		{"joined", errors.Join(errors.New("other"), domain.Errorf(domain.ENOTFOUND, "no such provider")), domain.ENOTFOUND, "no such provider"},
		{"unavailable", domain.ErrReadTimeout, domain.EUNAVAILABLE, domain.ErrReadTimeout.Message},
		{"plain errors are internal and not described", errors.New("pq: password authentication failed"), domain.EINTERNAL, "internal error"},
		{"nil", nil, domain.EINTERNAL, "internal error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := domain.ErrorCode(tc.err); got != tc.code {
				t.Errorf("ErrorCode = %q, want %q", got, tc.code)
			}
			if got := domain.ErrorMessage(tc.err); got != tc.message {
				t.Errorf("ErrorMessage = %q, want %q", got, tc.message)
			}
		})
	}
	if want := "invalid: " + invalid.Message; invalid.Error() != want {
		t.Errorf("Error() = %q, want the code before the message, %q", invalid.Error(), want)
	}
}

// Keep the windows of the overview in the order the page shows them.
func TestOverviewWindowsAscend(t *testing.T) {
	t.Parallel()
	for i := 1; i < len(domain.OverviewWindows); i++ {
		if domain.OverviewWindows[i] <= domain.OverviewWindows[i-1] {
			t.Fatalf("windows %v are not ascending", domain.OverviewWindows)
		}
	}
	if domain.OverviewWindows[0] != 24*time.Hour {
		t.Errorf("first window %v, want 24h", domain.OverviewWindows[0])
	}
}
