package main

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/cli"
	"github.com/tidemark/tidemark/domain"
)

// declared lists the flags a command's flags function declares, but
// aliases, which only its own help describes.
func declared(c command) []string {
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	c.Flags(cliEnv{getenv: func(string) string { return "" }}, fs)
	var names []string
	fs.VisitAll(func(f *flag.Flag) {
		if !cli.IsAlias(f) {
			names = append(names, f.Name)
		}
	})
	return names
}

// namesFlag reports whether a synopsis shows flag name.
func namesFlag(synopsis, name string) bool {
	return regexp.MustCompile(`(^|[\s\[])--` + regexp.QuoteMeta(name) + `([\s\]]|$)`).MatchString(synopsis)
}

// entry is the synopsis tidemark --help shows for c: from its name to its
// summary.
func entry(t *testing.T, help string, c command) string {
	t.Helper()
	start := strings.Index(help, "\n  tidemark "+c.Name+" ")
	if start < 0 {
		start = strings.Index(help, "\n  tidemark "+c.Name+"\n")
	}
	if start < 0 {
		t.Fatalf("tidemark --help lacks %q:\n%s", c.Name, help)
	}
	end := strings.Index(help[start:], "\n      "+c.Summary+"\n")
	if end < 0 {
		t.Fatalf("tidemark --help lacks the summary of %q:\n%s", c.Name, help)
	}
	return help[start : start+end]
}

func TestUsageNamesEveryFlagOfEveryCommand(t *testing.T) {
	t.Parallel()
	help, _, err := tidemark(t, nil, "", "--help")
	if err != nil {
		t.Fatalf("tidemark --help: %v", err)
	}
	_, noCommand, err := tidemark(t, nil, "")
	if err == nil || noCommand != help {
		t.Errorf("tidemark with no command: %v; want an error and the help on stderr, got\n%s", err, noCommand)
	}
	if !strings.Contains(help, "\nEnvironment:\n  DATABASE_URL ") || !strings.Contains(help, "TIDEMARK_ENCRYPTION_KEY") {
		t.Errorf("tidemark --help lacks the Environment section:\n%s", help)
	}
	for _, c := range commands().Commands {
		synopsis := entry(t, help, c)
		_, own, err := tidemark(t, nil, "", append(strings.Fields(c.Name), "--help")...)
		if !errors.Is(err, flag.ErrHelp) || !strings.HasPrefix(own, "Usage: tidemark "+c.Name) {
			t.Errorf("tidemark %s --help: %v\n%s", c.Name, err, own)
		}
		ownSynopsis, _, _ := strings.Cut(own, "\n\n")
		for _, name := range declared(c) {
			if !namesFlag(synopsis, name) {
				t.Errorf("tidemark --help does not name --%s of %s:\n%s", name, c.Name, synopsis)
			}
			if !namesFlag(ownSynopsis, name) {
				t.Errorf("tidemark %s --help does not name --%s in its synopsis:\n%s", c.Name, name, ownSynopsis)
			}
			if !strings.Contains(own, "\n  -"+name+" ") && !strings.Contains(own, "\n  -"+name+"\n") {
				t.Errorf("tidemark %s --help does not describe -%s:\n%s", c.Name, name, own)
			}
		}
		for _, name := range c.Required {
			if strings.Contains(synopsis, "[--"+name+" ") || strings.Contains(synopsis, "[--"+name+"]") {
				t.Errorf("tidemark --help shows the required --%s of %s as optional:\n%s", name, c.Name, synopsis)
			}
		}
	}
	for _, want := range []string{"--access read|write", "--expires 90d", "--role viewer|operator|owner", "--retention 720h", "--stream-duplicates 2m"} {
		if !strings.Contains(help, want) {
			t.Errorf("tidemark --help lacks %q", want)
		}
	}
}

func TestGroupHelpListsItsCommands(t *testing.T) {
	t.Parallel()
	for _, group := range []string{"tenant", "provider", "destination", "token", "user", "secrets", "alert"} {
		for _, ask := range []string{"--help", "-h", "help"} {
			out, _, err := tidemark(t, nil, "", group, ask)
			if err != nil {
				t.Errorf("tidemark %s %s: %v", group, ask, err)
				continue
			}
			for _, c := range commands().Commands {
				in := strings.HasPrefix(c.Name, group+" ")
				if got := strings.Contains(out, "  tidemark "+c.Name+" ") || strings.Contains(out, "  tidemark "+c.Name+"\n"); got != in {
					t.Errorf("tidemark %s %s lists %s: %v, want %v\n%s", group, ask, c.Name, got, in, out)
				}
			}
		}
	}
	out, _, _ := tidemark(t, nil, "", "user", "--help")
	for _, want := range []string{"tidemark user create --email EMAIL --password-stdin", "tidemark user password --email EMAIL --password-stdin"} {
		if !strings.Contains(out, want) {
			t.Errorf("tidemark user --help lacks %q:\n%s", want, out)
		}
	}
}

// A mistyped command says so, suggests the nearest command when one is
// close, and points to the help instead of printing it all; exit status 2.
func TestUnknownCommandsFailAfterHelp(t *testing.T) {
	t.Parallel()
	const help = "\nRun \"tidemark help\" for the list of commands."
	for _, tc := range []struct {
		args      []string
		err       string
		wantUsage bool
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"` + help, false},
		{[]string{"destinations", "list", "--tenant", "acme"}, `unknown command "destinations list"; did you mean "destination list"?` + help, false},
		{[]string{"provder", "lst"}, `unknown command "provder lst"; did you mean "provider list"?` + help, false},
		{[]string{"dest", "list"}, `unknown command "dest list"; did you mean "destination list"?` + help, false},
		{[]string{"serv", "--addr", "127.0.0.1:0"}, `unknown command "serv"; did you mean "serve"?` + help, false},
		{[]string{"user", "frobnicate"}, `unknown command "user frobnicate"` + "\nRun \"tidemark user help\" for its commands.", false},
		{[]string{"provider", "create2"}, `unknown command "provider create2"; did you mean "provider create"?` + help, false},
		{[]string{"user"}, `"user" needs one of its commands (above)`, true},
		{[]string{"tenant", "create", "--bogus"}, "flag provided but not defined: -bogus", true},
	} {
		out, stderr, err := tidemark(t, nil, "", tc.args...)
		if err == nil || err.Error() != tc.err || out != "" {
			t.Errorf("%v: %v, stdout %q; want the error %q", tc.args, err, out, tc.err)
		}
		if code := domain.ErrorCode(err); tc.err != "flag provided but not defined: -bogus" && code != domain.EINVALID {
			t.Errorf("%v: %s, want EINVALID (exit status 2)", tc.args, code)
		}
		if strings.Contains(stderr, "Run \"tidemark COMMAND --help\"") {
			t.Errorf("%v: the whole usage on stderr:\n%s", tc.args, stderr)
		}
		if got := strings.Contains(stderr, "Usage:"); got != tc.wantUsage {
			t.Errorf("%v: a usage on stderr %v, want %v:\n%s", tc.args, got, tc.wantUsage, stderr)
		}
	}
}

// The help shows flags as required (no brackets) that the commands refuse
// to run without.
func TestRequiredFlagsUsageMatchesTheCommands(t *testing.T) {
	t.Parallel()
	for _, c := range commands().Commands {
		if len(c.Required) == 0 {
			continue
		}
		_, _, err := tidemark(t, nil, "", strings.Fields(c.Name)...)
		if err == nil || !strings.Contains(err.Error(), "required") {
			t.Errorf("%s without flags: %v, want a refusal naming what is required", c.Name, err)
			continue
		}
		for _, name := range c.Required {
			if !strings.Contains(err.Error(), "--"+name) {
				t.Errorf("%s without flags: %v, want it to name --%s", c.Name, err, name)
			}
		}
	}
}

// The contract's command line (docs/contract/cli.md) shows each command's
// synopsis as tidemark --help prints it, so that the two cannot drift.
func TestContractShowsEveryUsage(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "contract", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Join(strings.Fields(string(doc)), " ")
	for _, c := range commands().Commands {
		want := strings.Join(strings.Fields("tidemark "+commands().Synopsis(c, "")), " ")
		if !strings.Contains(words, "## `tidemark "+c.Name+"` ``` "+want+" ```") {
			t.Errorf("docs/contract/cli.md lacks a section \"## `tidemark %s`\" showing its synopsis:\n%s", c.Name, want)
		}
	}
}
