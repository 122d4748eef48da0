package alertcheck_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

// TestAlertsFiringMetric: tidemark_alerts_firing counts the firing alerts
// of each tenant and rule, read from the table, so a second store (another
// node, which never evaluated) exports the same; a rule whose alerts all
// resolved reads 0, and a tenant without alerts has no series.
func TestAlertsFiringMetric(t *testing.T) {
	t.Parallel()
	s, crm := pgtest.Setup(t, postgres.New)
	pool := s.Pool()
	erp := pgtest.Provider(t, s, "acme", "erp")
	quietTenant := pgtest.Provider(t, s, "initech", "crm")
	other := pgtest.Provider(t, s, "globex", "crm")
	only(t, pool, crm.TenantID, alerting.ProviderSilent, 0, 0)
	only(t, pool, other.TenantID, alerting.ConflictsOpen, 0, 0)
	only(t, pool, quietTenant.TenantID, alerting.Refusals, 0, 0)
	t0 := time.Now()
	conflict(t, s, other, "c1")
	evaluate(t, s, t0.Add(7*time.Hour))
	deliver(t, s, erp, t0.Add(7*time.Hour+time.Minute), "e1")
	evaluate(t, s, t0.Add(7*time.Hour+2*time.Minute))
	firing := func(s *postgres.Store, byTenant bool, want string) {
		t.Helper()
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(s.AlertMetrics(slog.Default(), byTenant))
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				fmt.Fprintf(&got, "%s{", mf.GetName())
				for i, l := range m.GetLabel() {
					fmt.Fprintf(&got, "%s%s=%q", map[bool]string{true: ",", false: ""}[i > 0], l.GetName(), l.GetValue())
				}
				fmt.Fprintf(&got, "} %s %g\n", mf.GetType(), m.GetGauge().GetValue())
			}
		}
		if got.String() != want {
			t.Errorf("metrics:\n%s\nwant:\n%s", got.String(), want)
		}
	}
	firing(s, true, `tidemark_alerts_firing{rule="conflicts_open",tenant="globex"} GAUGE 1
tidemark_alerts_firing{rule="provider_silent",tenant="acme"} GAUGE 1
`)
	// Without tenant labels (serve's default) no tenant is named: whoever
	// reaches /metrics reads how many alerts fire of each rule, not where.
	firing(s, false, `tidemark_alerts_firing{rule="conflicts_open"} GAUGE 1
tidemark_alerts_firing{rule="provider_silent"} GAUGE 1
`)
	another := pgtest.On(t, postgres.New, pgtest.WarmPool(t, pool.Config().ConnString(), "tidemark other node", 2))
	deliver(t, s, crm, t0.Add(7*time.Hour+3*time.Minute), "e2")
	evaluate(t, s, t0.Add(7*time.Hour+4*time.Minute))
	firing(another, true, `tidemark_alerts_firing{rule="conflicts_open",tenant="globex"} GAUGE 1
tidemark_alerts_firing{rule="provider_silent",tenant="acme"} GAUGE 0
`)
}
