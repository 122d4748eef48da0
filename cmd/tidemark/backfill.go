package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/backfill"
)

// backfillFlags declares backfill's flags.
func backfillFlags(fs *flag.FlagSet) (tenant, provider *string, since *time.Duration, objectType *string) {
	tenant = fs.String("tenant", "", "the provider's tenant (slug)")
	provider = fs.String("provider", "", "the provider (name) whose API to pull from")
	since = fs.Duration("since", 72*time.Hour, "pull the records modified in this long before now")
	objectType = fs.String("object-type", "", "pull only this object type (one the provider's scopes name); default all")
	return
}

// backfill runs one backfill pass and prints its counts.
func (e cliEnv) backfill(ctx context.Context, args []string) error {
	fs := e.flags("backfill")
	tenant, provider, since, objectType := backfillFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *tenant == "" || *provider == "" {
		return fmt.Errorf("backfill: --tenant and --provider are required")
	}
	if *since <= 0 || *since > pull.MaxSince {
		return fmt.Errorf("backfill: --since %s: pull more than 0 and at most 90 days (2160h), such as 72h", *since)
	}
	log, err := newLogger("text", e.stderr)
	if err != nil {
		return err
	}
	db, err := e.openDatabase(ctx, openOptions{ingest: true})
	if err != nil {
		return err
	}
	defer db.close()
	last := time.Now()
	r := &backfill.Runner{Store: db.store, Log: log, Sources: backfill.NewSources(db.store, log),
		Progress: func(rep backfill.Report) {
			if time.Since(last) >= time.Second {
				fmt.Fprintf(e.stderr, "backfill: %d events in %d deliveries so far\n", rep.Events, rep.Deliveries)
				last = time.Now()
			}
		}}
	now := time.Now()
	rep, err := r.Run(ctx, backfill.Pass{Tenant: *tenant, Provider: *provider, From: now.Add(-*since), To: now, ObjectType: *objectType})
	if err == nil || rep.Pages > 0 { // a refusal before the first page pulled nothing to report
		fmt.Fprint(e.stdout, rep.String())
	}
	if err != nil {
		return fmt.Errorf("backfill stopped: %w", err)
	}
	return nil
}
