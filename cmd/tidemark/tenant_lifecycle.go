package main

import (
	"context"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/tenantcmd"
)

// tenantRun runs a tenant lifecycle command (cmd/tidemark/internal/tenantcmd) in e.
func tenantRun(run func(context.Context, tenantcmd.Env, []string) error) func(cliEnv, context.Context, []string) error {
	return func(e cliEnv, ctx context.Context, args []string) error {
		return cliError(run(ctx, tenantcmd.Env{Stdout: e.stdout, Flags: e.flags,
			WithStore: func(ctx context.Context, fn func(tenantcmd.Store) error) error {
				return e.withStore(ctx, func(s cliStore) error { return fn(s) })
			}}, args))
	}
}
