package main

import (
	"context"
	"fmt"

	"github.com/tidemark/tidemark/postgres"
)

func (e cliEnv) secretsRekey(ctx context.Context, args []string) error {
	fs := e.flags("secrets rekey", "secrets rekey [--batch 500]\n\n"+
		"Re-encrypt every provider secret under the first key of TIDEMARK_ENCRYPTION_KEY, bound to\n"+
		"its tenant and provider, and print how many changed. Secrets already there are left alone,\n"+
		"so a second run changes 0. Afterwards the other keys can be dropped from the list.")
	batch := fs.Int("batch", 500, "secrets re-encrypted per transaction")
	if _, err := parse(fs, args, 0); err != nil {
		return err
	}
	if *batch < 1 {
		return fmt.Errorf("secrets rekey: --batch must be at least 1")
	}
	return e.withStore(ctx, func(s *postgres.Store) error {
		changed, err := s.RekeySecrets(ctx, *batch)
		if changed > 0 || err == nil {
			fmt.Fprintf(e.stdout, "re-encrypted %d provider secrets\n", changed)
		}
		return err
	})
}
