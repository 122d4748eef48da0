package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
	"github.com/tidemark/tidemark/postgres/citus"
)

// citusDistributeFlags declares citus distribute's flags.
func citusDistributeFlags(fs *flag.FlagSet) (shards *int) {
	return fs.Int("shards", 0, "shards of each distributed table (default: Citus' citus.shard_count, 32)")
}

// citusDistribute distributes the migrated database over the Citus
// cluster whose coordinator DATABASE_URL names, and says what it did.
func (e cliEnv) citusDistribute(ctx context.Context, args []string) error {
	fs := e.flags("citus distribute")
	shards := citusDistributeFlags(fs)
	if _, err := cli.Parse(fs, args, 0); err != nil {
		return err
	}
	return e.withStore(ctx, func(s cliStore) error {
		r, err := citus.Distribute(ctx, s.Pool(), citus.Options{ShardCount: *shards})
		if err != nil {
			return err
		}
		if r.Workers == 0 {
			fmt.Fprintln(e.stderr, "no workers: the shards stay on the coordinator until workers are added (citus_add_node) and shards rebalanced (citus_rebalance_start)")
		}
		fmt.Fprint(e.stdout, r)
		return nil
	})
}
