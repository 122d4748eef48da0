package alerts_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// insertAlert stores an alert as the evaluator would: started minutes
// after base, resolved (with resolved value 0) when resolved.
func insertAlert(t *testing.T, s *postgres.Store, tenantID int64, rule alerting.Rule, subject string, base time.Time, minutes int, resolved bool) int64 {
	t.Helper()
	started := base.Add(time.Duration(minutes) * time.Minute)
	var resolvedAt *time.Time
	if resolved {
		r := started.Add(30 * time.Second)
		resolvedAt = &r
	}
	var id int64
	err := s.Pool().QueryRow(context.Background(), `
INSERT INTO alerts (tenant_id, rule, provider, subject, summary, value, threshold, window_seconds, started_at, resolved_at, resolved_value)
VALUES (@tenant_id, @rule, @subject, @subject, @summary, 7, 1, 360, @started_at, @resolved_at, CASE WHEN @resolved THEN 0 END)
RETURNING id`, pgx.NamedArgs{"tenant_id": tenantID, "rule": rule, "subject": subject, "summary": subject + " is silent.",
		"started_at": started, "resolved_at": resolvedAt, "resolved": resolved}).Scan(&id)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func ids(as []alerting.Alert) []int64 {
	var out []int64
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}

// TestAlertRulesDefaultsAndSet: a tenant's rules are every rule in order
// with its default until set; a set rule is stored, audited with what it
// was, and seen by that tenant only; a bad setting is refused and stores
// nothing.
func TestAlertRulesDefaultsAndSet(t *testing.T) {
	t.Parallel()
	ctx := pgtest.AsOperator(context.Background())
	s, p := pgtest.Setup(t, postgres.New)
	other := pgtest.Provider(t, s, "globex", "crm")

	rules, err := s.AlertRules(ctx, p.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != len(alerting.Rules) {
		t.Fatalf("%d rules, want %d", len(rules), len(alerting.Rules))
	}
	for i, r := range alerting.Rules {
		if rules[i] != alerting.Default(r) {
			t.Errorf("rule %d: %+v, want the default %+v", i, rules[i], alerting.Default(r))
		}
	}

	set := alerting.Config{Rule: alerting.Refusals, Enabled: false, Threshold: 50, Window: 10*time.Minute + 300*time.Millisecond}
	got, err := s.SetAlertRule(ctx, p.TenantID, set)
	if err != nil {
		t.Fatal(err)
	}
	want := alerting.Config{Rule: alerting.Refusals, Enabled: false, Threshold: 50, Window: 10 * time.Minute}
	if got != want {
		t.Errorf("set: %+v, want %+v (the window to the second)", got, want)
	}
	if _, err := s.SetAlertRule(ctx, p.TenantID, alerting.Config{Rule: alerting.Refusals, Enabled: true, Threshold: 5, Window: time.Hour}); err != nil {
		t.Fatal(err)
	}
	rules, _ = s.AlertRules(ctx, p.TenantID)
	if r := rules[1]; r.Rule != alerting.Refusals || !r.Enabled || r.Threshold != 5 || r.Window != time.Hour {
		t.Errorf("after the second set: %+v", r)
	}
	if rules[0] != alerting.Default(alerting.ProviderSilent) {
		t.Errorf("another rule changed: %+v", rules[0])
	}
	otherRules, _ := s.AlertRules(ctx, other.TenantID)
	if otherRules[1] != alerting.Default(alerting.Refusals) {
		t.Errorf("another tenant sees the change: %+v", otherRules[1])
	}

	rows, err := s.Pool().Query(ctx, `SELECT actor || ' ' || action || ' ' || target || ': ' || summary FROM audit_log
WHERE tenant_id = $1 AND action = 'alert_rule_set' ORDER BY id`, p.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	audit, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	wantAudit := []string{
		"ann@example.com alert_rule_set alert rule refusals: disabled, threshold 50, window 10m0s (was enabled, threshold 20, window 5m0s)",
		"ann@example.com alert_rule_set alert rule refusals: enabled, threshold 5, window 1h0m0s (was disabled, threshold 50, window 10m0s)",
	}
	if !slices.Equal(audit, wantAudit) {
		t.Errorf("audit:\n%q\nwant\n%q", audit, wantAudit)
	}

	for _, c := range []struct {
		cfg  alerting.Config
		code string
	}{
		{alerting.Config{Rule: "nope", Threshold: 1, Window: time.Hour}, domain.ENOTFOUND},
		{alerting.Config{Rule: alerting.Refusals, Threshold: 0, Window: time.Hour}, domain.EINVALID},
		{alerting.Config{Rule: alerting.Refusals, Threshold: 1, Window: 59 * time.Second}, domain.EINVALID},
		{alerting.Config{Rule: alerting.Refusals, Threshold: 1, Window: 31 * 24 * time.Hour}, domain.EINVALID},
	} {
		if _, err := s.SetAlertRule(ctx, p.TenantID, c.cfg); domain.ErrorCode(err) != c.code {
			t.Errorf("%+v: %v, want %s", c.cfg, err, c.code)
		}
	}
	if n := pgtest.Scalar(t, s.Pool(), `SELECT count(*) FROM audit_log WHERE action = 'alert_rule_set'`); n != 2 {
		t.Errorf("%d audit entries after refused changes, want 2", n)
	}
	// Without an actor nothing is stored unrecorded.
	if _, err := s.SetAlertRule(context.Background(), p.TenantID, want); err == nil {
		t.Error("a change without an actor was stored")
	}
}

// TestAlertsPagesBothWays: a tenant's alerts newest first, filtered by
// state, read forward page by page and back again; another tenant's
// alerts never appear; the firing ones are the banner's; a bad cursor is
// EINVALID.
func TestAlertsPagesBothWays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, p := pgtest.Setup(t, postgres.New)
	other := pgtest.Provider(t, s, "globex", "crm")
	base := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	insertAlert(t, s, other.TenantID, alerting.ProviderSilent, "crm", base, 100, false)
	insertAlert(t, s, other.TenantID, alerting.Refusals, "crm", base, 101, true)

	var all, firing, resolved []int64 // newest first
	for i := range 7 {
		res := i%3 != 0 // 0, 3, 6 fire
		id := insertAlert(t, s, p.TenantID, alerting.ProviderSilent, fmt.Sprintf("p%d", i), base, i, res)
		all = append([]int64{id}, all...)
		if res {
			resolved = append([]int64{id}, resolved...)
		} else {
			firing = append([]int64{id}, firing...)
		}
	}
	// Two alerts started at once are ordered by id.
	same := insertAlert(t, s, p.TenantID, alerting.Refusals, "p3", base, 3, true)
	all = slices.Insert(all, 3, same)
	resolved = slices.Insert(resolved, 2, same)

	for _, w := range []struct {
		state alerting.State
		want  []int64
	}{{"", all}, {alerting.Firing, firing}, {alerting.Resolved, resolved}} {
		var forward, lastPage []int64
		list, c, err := s.Alerts(ctx, p.TenantID, w.state, domain.Page{Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if c.Prev != "" {
			t.Errorf("%q: the first page has a way back", w.state)
		}
		for {
			lastPage = ids(list)
			forward = append(forward, lastPage...)
			if c.Next == "" {
				break
			}
			if list, c, err = s.Alerts(ctx, p.TenantID, w.state, domain.Page{Limit: 2, Cursor: c.Next}); err != nil {
				t.Fatal(err)
			}
			if c.Prev == "" {
				t.Errorf("%q: a later page has no way back", w.state)
			}
		}
		if !slices.Equal(forward, w.want) {
			t.Errorf("%q forward: %v, want %v", w.state, forward, w.want)
		}
		backward := lastPage
		for c.Prev != "" {
			if list, c, err = s.Alerts(ctx, p.TenantID, w.state, domain.Page{Limit: 2, Before: c.Prev}); err != nil {
				t.Fatal(err)
			}
			backward = append(ids(list), backward...)
		}
		if !slices.Equal(backward, w.want) {
			t.Errorf("%q backward: %v, want %v", w.state, backward, w.want)
		}
	}

	list, _, err := s.Alerts(ctx, p.TenantID, alerting.Resolved, domain.Page{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	a := list[0]
	if a.State() != alerting.Resolved || a.Value != 0 || a.Threshold != 1 || a.Window != 6*time.Minute ||
		a.Provider != "p5" || a.Summary != "p5 is silent." || !a.StartedAt.Equal(base.Add(5*time.Minute)) ||
		!a.ResolvedAt.Equal(base.Add(5*time.Minute+30*time.Second)) {
		t.Errorf("a resolved alert as read: %+v", a)
	}

	got, err := s.FiringAlerts(ctx, p.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids(got), firing) || got[0].Value != 7 || got[0].ResolvedAt != nil {
		t.Errorf("firing: %+v, want ids %v", got, firing)
	}
	if got, _ := s.FiringAlerts(ctx, other.TenantID); len(got) != 1 || got[0].Provider != "crm" {
		t.Errorf("the other tenant's firing alerts: %+v", got)
	}

	if _, _, err := s.Alerts(ctx, p.TenantID, "", domain.Page{Cursor: "not-a-cursor"}); domain.ErrorCode(err) != domain.EINVALID {
		t.Errorf("a bad cursor: %v", err)
	}
	if _, _, err := s.Alerts(ctx, p.TenantID, "open", domain.Page{}); domain.ErrorCode(err) != domain.EINVALID {
		t.Errorf("a bad state: %v", err)
	}
}
