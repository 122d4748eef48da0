package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"time"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
	"github.com/tidemark/tidemark/internal/supervisor"
	"github.com/tidemark/tidemark/postgres"
)

// auditFlags declares audit's flags.
func auditFlags(fs *flag.FlagSet) (tenant *string) {
	return fs.String("tenant", "", "check only this tenant (the report is printed, not stored)")
}

func (e cliEnv) audit(ctx context.Context, args []string) error {
	fs := e.flags("audit")
	tenant := auditFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	return e.withStore(ctx, func(s cliStore) error {
		var tenantID int64
		if *tenant != "" {
			t, err := s.Tenant(ctx, *tenant)
			if err != nil {
				return err
			}
			tenantID = t.ID
		}
		r, err := s.Reconcile(ctx, tenantID, 0)
		if err != nil {
			return err
		}
		for _, v := range r.Violations {
			fmt.Fprintln(e.stdout, v)
		}
		fmt.Fprintln(e.stdout, r.Summary())
		if *tenant == "" {
			if err := s.SaveReconciliation(ctx, r); err != nil {
				return fmt.Errorf("store the report: %w", err)
			}
		}
		if n := r.Total(); n == 1 {
			return fmt.Errorf("audit found 1 violation")
		} else if n > 1 {
			return fmt.Errorf("audit found %d violations", n)
		}
		return nil
	})
}

// reconcileCheckEvery is how often serve checks whether the nightly
// reconciliation is due (reconciliation.Due), the first time that
// long after it starts; reconcileRetry, how long it waits after a run
// failed, since a run reads whole tables.
const (
	reconcileCheckEvery = 15 * time.Minute
	reconcileRetry      = time.Hour
)

// reconcileService runs the nightly reconciliation when it is due, checking
// every reconcileCheckEvery. Several nodes may check at once: one runs it,
// the others skip.
func reconcileService(store *postgres.Store, log *slog.Logger) supervisor.Service {
	return supervisor.Every("reconciliation", reconcileCheckEvery, func(ctx context.Context) time.Duration {
		r, ran, err := store.ReconcileNightly(ctx, time.Now())
		switch {
		case ctx.Err() != nil:
		case err != nil:
			log.Error("reconciliation failed; retrying in an hour", "err", err)
			return reconcileRetry
		case ran && r.Total() > 0:
			log.Warn("reconciliation found violations (see /admin/reconciliation or run tidemark audit)", "report", r.Summary())
		case ran:
			log.Info("reconciliation", "report", r.Summary())
		}
		return reconcileCheckEvery
	})
}
