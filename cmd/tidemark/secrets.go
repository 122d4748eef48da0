package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
)

// secretsRekeyFlags declares secrets rekey's flags.
func secretsRekeyFlags(fs *flag.FlagSet) (batch *int) {
	return fs.Int("batch", 500, "secrets re-encrypted per transaction")
}

func (e cliEnv) secretsRekey(ctx context.Context, args []string) error {
	fs := e.flags("secrets rekey")
	batch := secretsRekeyFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	if *batch < 1 {
		return fmt.Errorf("secrets rekey: --batch must be at least 1")
	}
	return e.withStore(ctx, func(s cliStore) error {
		n, err := s.RekeySecrets(ctx, *batch)
		if n.Providers+n.Destinations+n.APICredentials+n.NATSCredentials > 0 || err == nil {
			fmt.Fprintf(e.stdout, "re-encrypted %d provider secrets and %d destination secrets\n", n.Providers, n.Destinations)
		}
		// A line of its own, and only when there were some: the first
		// line is what scripts of earlier versions read.
		if n.APICredentials > 0 {
			fmt.Fprintf(e.stdout, "re-encrypted %d provider API credentials\n", n.APICredentials)
		}
		if n.NATSCredentials > 0 {
			fmt.Fprintf(e.stdout, "re-encrypted %d NATS destination credentials\n", n.NATSCredentials)
		}
		if n.Apps+n.AppInstalls > 0 {
			fmt.Fprintf(e.stdout, "re-encrypted %d app client secrets and the tokens of %d app installs\n", n.Apps, n.AppInstalls)
		}
		if n.SSO > 0 {
			fmt.Fprintln(e.stdout, "re-encrypted the SSO client secret")
		}
		if n.IDHashKey > 0 {
			fmt.Fprintln(e.stdout, "re-encrypted the id hash key (unchanged)")
		}
		return err
	})
}
