package alerting_test

import (
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
)

// TestSettingsInWords: windows parse as Go durations and refuse anything
// else naming the field; states parse; settings and rules read as the
// audit log and the pages show them.
func TestSettingsInWords(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"90s": 90 * time.Second, "5m": 5 * time.Minute, " 6h ": 6 * time.Hour, "1h30m": 90 * time.Minute} {
		if got, err := alerting.ParseWindow(in); err != nil || got != want {
			t.Errorf("ParseWindow(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "5", "soon", "5 minutes"} {
		if _, err := alerting.ParseWindow(in); domain.ErrorCode(err) != domain.EINVALID || domain.ErrorMessage(err)[:6] != "window" {
			t.Errorf("ParseWindow(%q): %v, want EINVALID naming the window", in, err)
		}
	}
	for _, in := range []string{"", "firing", "resolved"} {
		if got, err := alerting.ParseState(in); err != nil || string(got) != in {
			t.Errorf("ParseState(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := alerting.ParseState("open"); domain.ErrorCode(err) != domain.EINVALID {
		t.Errorf("ParseState(open): %v", err)
	}
	if got := alerting.Describe(alerting.Config{Rule: alerting.Refusals, Threshold: 20, Window: 5 * time.Minute}); got != "disabled, threshold 20, window 5m0s" {
		t.Errorf("Describe: %q", got)
	}
	for _, r := range alerting.Rules {
		if alerting.About(r) == "" {
			t.Errorf("rule %s has no description", r)
		}
	}
}
