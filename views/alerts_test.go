package views_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/views"
)

// TestAlertsBanner: one firing alert is "1 alert firing"; past three the
// banner names the first three and how many more; none, no banner.
func TestAlertsBanner(t *testing.T) {
	t.Parallel()
	firing := func(n int) []alerting.Alert {
		var as []alerting.Alert
		for i := range n {
			as = append(as, alerting.Alert{ID: int64(i + 1), Summary: fmt.Sprintf("Alert %d.", i+1)})
		}
		return as
	}
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, ""},
		{1, "1 alert firing: Alert 1."},
		{3, "3 alerts firing: Alert 1. · Alert 2. · Alert 3."},
		{5, "5 alerts firing: Alert 1. · Alert 2. · Alert 3. · and 2 more"},
	} {
		l := acme("events")
		l.Firing = firing(tc.n)
		doc, _ := render(t, views.Message(l, "Hello", "Body text"))
		if got := text(doc, ".content > .alerts-banner a[href='/t/acme/alerts']"); got != tc.want {
			t.Errorf("%d firing: banner %q, want %q", tc.n, got, tc.want)
		}
	}
}

// TestAlertWindow: windows read the short way.
func TestAlertWindow(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		6 * time.Hour: "6h", 5 * time.Minute: "5m", 90 * time.Minute: "1h30m", 90 * time.Second: "1m30s",
		time.Hour + time.Second: "1h0m1s", 720 * time.Hour: "720h",
	} {
		if got := views.AlertWindow(d); got != want {
			t.Errorf("%s: %q, want %q", d, got, want)
		}
	}
}
