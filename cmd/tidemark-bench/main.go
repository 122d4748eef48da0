// Command tidemark-bench measures the tidemark receiver: its ingest rate
// against the PostgreSQL floor, what bursts of concurrent signups leave
// behind, and how its change feed and destinations keep up with ingest. It
// is its own module so that its dependencies (a Redis client for the
// redis-lock comparison) never reach the product's go.mod or binary.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

const usage = `tidemark-bench: load and concurrency benchmarks of the tidemark receiver.

Usage:
  tidemark-bench ingest [flags]
  tidemark-bench burst [flags]
  tidemark-bench queue [flags]
  tidemark-bench feed [flags]

All build the tidemark server from this source tree and run it as a child
process on a scratch database of the PostgreSQL server at --server-url.

Environment:
  DATABASE_URL  default of --server-url (else the local server's socket).

Run "tidemark-bench COMMAND --help" for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tidemark-bench:", err)
		os.Exit(1)
	}
}

// run dispatches a command line. Flags and environment are read only here
// and in the command functions it calls.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	env := cliEnv{getenv: getenv, stdout: stdout, stderr: stderr}
	switch cmd, rest := args[0], args[1:]; cmd {
	case "ingest":
		return env.benchIngest(ctx, rest)
	case "burst":
		return env.benchBurst(ctx, rest)
	case "queue":
		return env.benchQueue(ctx, rest)
	case "feed":
		return env.benchFeed(ctx, rest)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}

// cliEnv is the process environment a command runs in.
type cliEnv struct {
	getenv func(string) string
	stdout io.Writer
	stderr io.Writer
}

// flags returns a FlagSet that prints its usage to stderr and reports
// errors instead of exiting.
func (e cliEnv) flags(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: tidemark-bench %s\n\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// serverURL is the default of --server-url: DATABASE_URL, else the local
// server's socket.
func (e cliEnv) serverURL() string {
	if u := e.getenv("DATABASE_URL"); u != "" {
		return u
	}
	return "postgres:///postgres?host=/var/run/postgresql&sslmode=disable"
}

// parse parses flags and rejects positional arguments.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return fmt.Errorf("%s: expected 0 argument(s), got %d", fs.Name(), fs.NArg())
	}
	return nil
}

// parseCounts reads a comma-separated list such as "50,100,500" of
// positive integers; name (such as "burst: --concurrency") begins its errors.
func parseCounts(name, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s %q: %q is not a positive integer", name, s, f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s is empty", name)
	}
	return out, nil
}
