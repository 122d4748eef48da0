package alerting_test

import (
	"slices"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
)

// TestRegistry: the rules keep their order on the pages and their
// defaults, every rule is fully defined, and Check names them all.
func TestRegistry(t *testing.T) {
	t.Parallel()
	defaults := []alerting.Config{
		{Rule: alerting.ProviderSilent, Threshold: 1, Window: 6 * time.Hour},
		{Rule: alerting.Refusals, Threshold: 20, Window: 5 * time.Minute},
		{Rule: alerting.ConflictsOpen, Threshold: 1, Window: time.Hour},
		{Rule: alerting.DestinationFailing, Threshold: 1, Window: 15 * time.Minute},
		{Rule: alerting.QueueBacklog, Threshold: 1, Window: 15 * time.Minute},
		{Rule: alerting.DeadLetters, Threshold: 1, Window: time.Hour},
		{Rule: alerting.Reconciliation, Threshold: 1, Window: 15 * time.Minute},
		{Rule: "no_such_rule", Threshold: 1, Window: 15 * time.Minute},
	}
	at := -1
	for _, c := range defaults {
		c.Enabled = true
		if got := alerting.Default(c.Rule); got != c {
			t.Errorf("Default(%s) = %+v, want %+v", c.Rule, got, c)
		}
		if i := slices.Index(alerting.Rules, c.Rule); alerting.Known(c.Rule) && i < at {
			t.Errorf("%s is listed before the rules it followed: %v", c.Rule, alerting.Rules)
		} else {
			at = i
		}
	}
	for i, d := range alerting.Defs() {
		if d.Rule != alerting.Rules[i] || d.About == "" || alerting.About(d.Rule) != d.About || d.Judge == nil ||
			alerting.Default(d.Rule) != d.Default() {
			t.Errorf("rule %s is not fully defined: %+v", d.Rule, d)
		}
		if err := alerting.Check(d.Default()); err != nil {
			t.Errorf("rule %s: its default is refused: %v", d.Rule, err)
		}
	}
	if alerting.Known("nope") || alerting.About("nope") != "" {
		t.Error("an unknown rule is known")
	}
	err := alerting.Check(alerting.Config{Rule: "nope", Threshold: 1, Window: time.Hour})
	if domain.ErrorCode(err) != domain.ENOTFOUND || domain.ErrorMessage(err) != `no alert rule "nope": the rules are `+alerting.RuleList("and") {
		t.Errorf("Check: %v", err)
	}
}

// TestMeasure: a measure carries the reading's subject and setting with
// the rule's verdict.
func TestMeasure(t *testing.T) {
	t.Parallel()
	d, _ := alerting.Lookup(alerting.Refusals)
	got := d.Measure(alerting.Reading{TenantID: 7, Provider: "crm", Subject: "crm", Threshold: 5, Window: time.Minute, Count: 8})
	want := alerting.Measure{TenantID: 7, Holds: true, Threshold: 5, Window: time.Minute, Finding: alerting.Finding{
		Rule: alerting.Refusals, Provider: "crm", Subject: "crm", Value: 8, Summary: "8 refused deliveries from crm in 1m (threshold 5)."}}
	if got != want {
		t.Errorf("Measure = %+v\nwant      %+v", got, want)
	}
}

// judgeCase is what a rule's statement read and what the rule decides;
// the reading's threshold and window are the rule's defaults unless set.
type judgeCase struct {
	name string
	in   alerting.Reading
	want alerting.Verdict
}

// judgeNow is the evaluation's time in the judge cases.
var judgeNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// ago is d before judgeNow.
func ago(d time.Duration) time.Time { return judgeNow.Add(-d) }

// testJudge runs rule's judge on each case, with no database.
func testJudge(t *testing.T, rule alerting.Rule, cases []judgeCase) {
	t.Helper()
	d, ok := alerting.Lookup(rule)
	if !ok {
		t.Fatalf("no rule %s", rule)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			in := c.in
			in.Now = judgeNow
			if in.Threshold == 0 {
				in.Threshold = d.Threshold
			}
			if in.Window == 0 {
				in.Window = d.Window
			}
			if got := d.Judge(in); got != c.want {
				t.Errorf("Judge = %+v\nwant    %+v", got, c.want)
			}
		})
	}
}
