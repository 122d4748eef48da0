// Command tidemark receives CRM webhooks and keeps their records exactly
// once, in order, in PostgreSQL. See README.md and docs/contract/cli.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"os/user"
	"strings"
	"syscall"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
	"github.com/tidemark/tidemark/domain"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tidemark:", err)
		// 2: refused as given (bad input, a limit reached), so that a
		// script can tell it from a failure that running again may cure.
		if domain.ErrorCode(err) == domain.EINVALID {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// run dispatches a command line. Flags and environment are read only here
// and in the command functions it calls.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return fmt.Errorf("no command given")
	}
	env := cliEnv{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	cmd, rest := args[0], args[1:]
	list := commands()
	if cli.IsHelp(cmd) {
		fmt.Fprint(stdout, usage())
		return nil
	}
	if c, ok := list.Lookup(cmd); ok {
		return c.Run(env, ctx, rest)
	}
	if list.IsGroup(cmd) {
		if len(rest) == 0 {
			fmt.Fprint(stderr, list.GroupUsage(cmd))
			return cli.Refused("%q needs one of its commands (above)", cmd)
		}
		verb := rest[0]
		if cli.IsHelp(verb) {
			fmt.Fprint(stdout, list.GroupUsage(cmd))
			return nil
		}
		if c, ok := list.Lookup(cmd + " " + verb); ok {
			return c.Run(env, domain.WithActor(ctx, cliActor(getenv)), rest[1:])
		}
	}
	return list.Unknown(args)
}

// cliEnv is the process environment a command runs in.
type cliEnv struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// flags returns the FlagSet of the command named (cli.List.FlagSet).
func (e cliEnv) flags(name string) *flag.FlagSet { return commands().FlagSet(name, e.stderr) }

// cliActor is who the audit log names for changes made from the command
// line: the operating-system user, since the CLI acts with the database's
// authority rather than as an operator. $USER is often unset (containers,
// cron, systemd units), so the user is then looked up by the process's
// uid; only when that fails too is it "cli".
func cliActor(getenv func(string) string) domain.Actor {
	return domain.Actor{Kind: domain.ActorCLI, Name: cliUser(getenv, user.Current)}
}

// cliUser is the operating-system user the command runs as: $USER, else
// the account of the process's uid, else "cli".
func cliUser(getenv func(string) string, current func() (*user.User, error)) string {
	if name := strings.TrimSpace(getenv("USER")); name != "" {
		return name
	}
	if u, err := current(); err == nil && strings.TrimSpace(u.Username) != "" {
		return strings.TrimSpace(u.Username)
	}
	return "cli"
}
