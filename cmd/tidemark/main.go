// Command tidemark receives CRM webhooks and keeps their records exactly
// once, in order, in PostgreSQL. See README.md and docs/contract.md section 3.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/tidemark/tidemark/domain"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const usage = `tidemark: webhook idempotency and ordering for CRM data, on PostgreSQL.

Usage:
  tidemark serve [--addr 127.0.0.1:8080] [--public-url URL] [--retention 720h] [--history-retention DURATION] [--read-timeout 5s] [--trusted-proxies CIDR,...] [--memory-limit 48MiB]
                 [--metrics-addr ADDR] [--allow-remote] [--queue nats://HOST:4222 [--stream TIDEMARK] [--stream-replicas 1] [--stream-duplicates 2m]]
  tidemark worker --queue nats://HOST:4222 [--stream TIDEMARK]
  tidemark migrate
  tidemark tenant create SLUG [--name NAME]
  tidemark provider create --tenant SLUG --name NAME --kind KIND [--secret SECRET] [--max-body SIZE] [--public-url URL]
  tidemark provider rotate --tenant SLUG --name NAME [--secret SECRET] [--public-url URL]
  tidemark provider retire --tenant SLUG --name NAME
  tidemark provider update --tenant SLUG --provider NAME [--max-body SIZE] [--max-future-skew DURATION]
  tidemark token create --tenant SLUG [--name NAME]
  tidemark user create --email EMAIL --password-stdin [--admin] [--tenant SLUG]
  tidemark user password --email EMAIL --password-stdin
  tidemark cleanup [--retention 720h] [--history-retention DURATION]
  tidemark audit [--tenant SLUG]
  tidemark secrets rekey [--batch 500]
  tidemark send --url URL --secret SECRET [--contact ID --revision N --snapshot JSON]

Environment:
  DATABASE_URL             PostgreSQL connection string. Without it, serve starts an
                           embedded PostgreSQL under ./.tidemark with a demo tenant.
  TIDEMARK_ENCRYPTION_KEY  base64 of 32 bytes encrypting provider secrets at rest;
                           several comma-separated: the first encrypts, all decrypt.
                           Create it once (openssl rand -base64 32) and keep it. With
                           DATABASE_URL, commands that touch secrets refuse to run
                           without it; the embedded database uses (and creates)
                           ./.tidemark/encryption.key.
  TIDEMARK_PUBLIC_URL      base URL providers call (same as serve --public-url).
  TIDEMARK_TRUSTED_PROXIES same as serve --trusted-proxies.
  TIDEMARK_QUEUE           same as serve --queue and worker --queue.

Run "tidemark COMMAND --help" for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tidemark:", err)
		os.Exit(1)
	}
}

// run dispatches a command line. Flags and environment are read only here
// and in the command functions it calls.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("no command given")
	}
	env := cliEnv{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	cmd, rest := args[0], args[1:]
	sub := func() (string, []string) {
		if len(rest) == 0 {
			return "", nil
		}
		return rest[0], rest[1:]
	}
	switch cmd {
	case "serve":
		return env.serve(ctx, rest)
	case "worker":
		return env.worker(ctx, rest)
	case "migrate":
		return env.migrate(ctx, rest)
	case "cleanup":
		return env.cleanup(ctx, rest)
	case "audit":
		return env.audit(ctx, rest)
	case "send":
		return env.send(ctx, rest)
	case "tenant", "provider", "token", "user", "secrets":
		verb, rest := sub()
		ctx = domain.WithActor(ctx, cliActor(getenv))
		switch cmd + " " + verb {
		case "tenant create":
			return env.tenantCreate(ctx, rest)
		case "provider create":
			return env.providerCreate(ctx, rest)
		case "provider rotate":
			return env.providerRotate(ctx, rest)
		case "provider retire":
			return env.providerRetire(ctx, rest)
		case "provider update":
			return env.providerUpdate(ctx, rest)
		case "token create":
			return env.tokenCreate(ctx, rest)
		case "user create":
			return env.userCreate(ctx, rest)
		case "user password":
			return env.userPassword(ctx, rest)
		case "secrets rekey":
			return env.secretsRekey(ctx, rest)
		}
		return fmt.Errorf("unknown command %q; run tidemark --help", cmd+" "+verb)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", cmd)
}

// cliEnv is the process environment a command runs in.
type cliEnv struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// flags returns a FlagSet that prints its usage to stderr and reports
// errors instead of exiting.
func (e cliEnv) flags(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: tidemark %s\n\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses flags and rejects stray arguments.
func parse(fs *flag.FlagSet, args []string, positional int) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() != positional {
		fs.Usage()
		return nil, fmt.Errorf("%s: expected %d argument(s), got %d", fs.Name(), positional, fs.NArg())
	}
	return fs.Args(), nil
}

// cliActor is who the audit log names for changes made from the command
// line: the operating-system user, since the CLI acts with the database's
// authority rather than as an operator.
func cliActor(getenv func(string) string) domain.Actor {
	name := getenv("USER")
	if name == "" {
		name = "unknown"
	}
	return domain.Actor{Kind: domain.ActorCLI, Name: name}
}
