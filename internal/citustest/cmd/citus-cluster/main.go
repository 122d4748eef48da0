// Command citus-cluster starts a local Citus cluster (a coordinator and two
// workers) for development, prints the coordinator's DATABASE_URL and keeps
// the cluster until Ctrl-C, when it stops the nodes and removes their
// folder. `make citus` runs it after scripts/citus-build.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tidemark/tidemark/internal/citustest"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "-sweep" {
		// Only the clusters' folders left by exited processes (make test-citus).
		if err := citustest.Sweep(os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "citus-cluster:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := citustest.New(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "citus-cluster:", err)
		os.Exit(1)
	}
	fmt.Printf("DATABASE_URL=%s\n", c.URL())
	for i, u := range c.WorkerURLs() {
		fmt.Printf("# worker %d: %s\n", i+1, u)
	}
	fmt.Fprintln(os.Stderr, "Citus cluster running; Ctrl-C stops it and removes its data")
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "stopping the Citus cluster")
	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "citus-cluster:", err)
		os.Exit(1)
	}
}
