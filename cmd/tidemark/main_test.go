package main

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/internal/testlog"
)

// syncBuffer is a buffer safe for a running command and a test to share.
type syncBuffer = testlog.Buffer

// tidemark runs a command line with env as the whole environment.
func tidemark(t *testing.T, env map[string]string, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut syncBuffer
	err = run(context.Background(), args, func(k string) string { return env[k] }, strings.NewReader(stdin), &out, &errOut)
	return out.String(), errOut.String(), err
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func TestAdminCommands(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": testdb.NewURL(t),
		"TIDEMARK_ENCRYPTION_KEY": "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="}

	if out, _, err := tidemark(t, env, "", "migrate"); err != nil || !strings.Contains(out, "up to date") {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	if _, _, err := tidemark(t, env, "", "tenant", "create", "acme", "--name", "Acme Inc"); err != nil {
		t.Fatalf("tenant create: %v", err)
	}
	if _, _, err := tidemark(t, env, "", "tenant", "create", "acme"); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second tenant create: %v, want already exists", err)
	}
	if _, _, err := tidemark(t, env, "", "tenant", "create", "Not_A_Slug"); err == nil || !strings.Contains(err.Error(), "a-z") {
		t.Fatalf("bad slug: %v", err)
	}

	out, _, err := tidemark(t, env, "", "provider", "create", "--tenant", "acme", "--name", "crm", "--kind", "standard")
	if err != nil || !regexp.MustCompile(`^whsec_[A-Za-z0-9+/=]{40,}$`).MatchString(lastLine(out)) {
		t.Fatalf("provider create: %v, last line %q", err, lastLine(out))
	}
	out, _, err = tidemark(t, env, "", "provider", "create", "--tenant", "acme", "--name", "given", "--kind", "standard", "--secret", "whsec_dGVzdHNlY3JldA==")
	if err != nil || lastLine(out) != "whsec_dGVzdHNlY3JldA==" {
		t.Fatalf("provider create --secret: %v, last line %q", err, lastLine(out))
	}
	if _, _, err := tidemark(t, env, "", "provider", "create", "--tenant", "nobody", "--name", "crm", "--kind", "standard"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("provider for unknown tenant: %v", err)
	}
	if _, _, err := tidemark(t, env, "", "provider", "create", "--tenant", "acme", "--name", "x", "--kind", "standard", "--secret", "plain"); err == nil {
		t.Fatal("a secret that is not whsec_ base64 was accepted")
	}
	if _, _, err := tidemark(t, env, "", "provider", "create", "--tenant", "acme"); err == nil || !strings.Contains(err.Error(), "required") {
		t.Fatalf("missing flags: %v", err)
	}

	out, _, err = tidemark(t, env, "", "token", "create", "--tenant", "acme", "--name", "ci")
	if err != nil || !strings.HasPrefix(lastLine(out), "tmk_") {
		t.Fatalf("token create: %v, last line %q", err, lastLine(out))
	}
	if _, _, err := tidemark(t, env, "correct horse battery\n", "user", "create", "--email", "Ops@Example.com", "--password-stdin", "--tenant", "acme"); err != nil {
		t.Fatalf("user create: %v", err)
	}
	if _, _, err := tidemark(t, env, "", "user", "create", "--email", "x@example.com", "--password-stdin"); err == nil {
		t.Fatal("user create with no password on stdin succeeded")
	}
	if out, _, err := tidemark(t, env, "", "cleanup"); err != nil || !strings.Contains(out, "expired idempotency keys") {
		t.Fatalf("cleanup: %v\n%s", err, out)
	}
}

func TestHelpAndUnknownCommands(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"serve", "--help"}, {"provider", "create", "--help"}, {"cleanup", "-h"}} {
		_, stderr, err := tidemark(t, nil, "", args...)
		if !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr, "Usage: tidemark") {
			t.Errorf("%v: %v, usage %q", args, err, stderr)
		}
	}
	if _, _, err := tidemark(t, nil, "", "frobnicate"); err == nil {
		t.Error("unknown command succeeded")
	}
	if _, _, err := tidemark(t, nil, "", "tenant", "create", "acme"); err == nil || !strings.Contains(err.Error(), "DATABASE_URL") {
		t.Errorf("no database: %v, want a message naming DATABASE_URL", err)
	}
}

// TestServeEmbeddedDefault runs the README's first command: serve with no
// configuration starts an embedded PostgreSQL and a demo tenant, accepts a
// signed event, and keeps its data for the next start. The demo password
// and the provider's secret are printed at the first start only, and the
// first start leaves no ERROR in PostgreSQL's log.
// It changes the working directory, so it cannot run in parallel.
func TestServeEmbeddedDefault(t *testing.T) {
	dir := t.TempDir()
	// The embedded server runs as the postgres user when we are root.
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	t.Chdir(dir)

	start := func() (stop func(), stdout *syncBuffer) {
		ctx, cancel := context.WithCancel(context.Background())
		var out, errOut syncBuffer
		done := make(chan error, 1)
		go func() {
			done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0"}, func(string) string { return "" }, nil, &out, &errOut)
		}()
		deadline := time.Now().Add(60 * time.Second)
		for !strings.Contains(out.String(), "listening on") {
			select {
			case err := <-done:
				t.Fatalf("serve exited: %v\n%s", err, errOut.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("serve did not start:\n%s\n%s", out.String(), errOut.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		}, &out
	}

	stop, out := start()
	sendCmd := regexp.MustCompile(`send --url (\S+) --secret (\S+)`).FindStringSubmatch(out.String())
	if sendCmd == nil {
		stop()
		t.Fatalf("serve printed no test command:\n%s", out.String())
	}
	for _, want := range []string{"/t/demo", "demo@tidemark.local"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("serve output lacks %q:\n%s", want, out.String())
		}
	}
	// The demo operator's password is printed at the first start only, and
	// signs in; the folder is the owner's alone.
	login := regexp.MustCompile(`demo@tidemark\.local / (\S+)`).FindStringSubmatch(out.String())
	if login == nil {
		stop()
		t.Fatalf("the first start printed no demo password:\n%s", out.String())
	}
	base, _, _ := strings.Cut(sendCmd[1], "/webhooks/")
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).
		PostForm(base+"/login", url.Values{"email": {"demo@tidemark.local"}, "password": {login[1]}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Errorf("the printed demo password did not sign in: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if !strings.Contains(out.String(), "--secret "+sendCmd[2]+" \\\n") || !strings.Contains(out.String(), sendCmd[2]+"   (shown this once: keep it)") {
		t.Errorf("the first start did not print the secret once with the send command:\n%s", out.String())
	}
	// The ingest connections are made after the migrations: none planned
	// its statements against missing tables.
	if pglog, err := os.ReadFile(filepath.Join(dataDir, "postgres.log")); err != nil {
		t.Error(err)
	} else if lines := regexp.MustCompile(`(?m)^.*ERROR:.*$`).FindAllString(string(pglog), -1); len(lines) > 0 {
		t.Errorf("the first start logged %d ERROR line(s) in postgres.log:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	if fi, err := os.Stat(dataDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("./%s: %v, mode %v; want 0700", dataDir, err, fi.Mode().Perm())
	}
	send := func(url string) string {
		got, _, err := tidemark(t, nil, "", "send", "--url", url, "--secret", sendCmd[2], "--id", "readme-1")
		if err != nil {
			t.Fatalf("send: %v\n%s", err, got)
		}
		return got
	}
	if got := send(sendCmd[1]); !strings.Contains(got, `"outcome":"applied"`) {
		t.Fatalf("first send: %s", got)
	}
	stop()

	stop, out = start()
	defer stop()
	// The secret is not shown again: the command has a placeholder, and
	// the start says how to get a new secret.
	again := regexp.MustCompile(`send --url (\S+) --secret (\S+)`).FindStringSubmatch(out.String())
	if again == nil || again[2] != "whsec_..." || strings.Contains(out.String(), sendCmd[2]) ||
		!strings.Contains(out.String(), "provider rotate --tenant demo --provider crm") {
		t.Fatalf("the second start printed the secret, or not how to get a new one:\n%s", out.String())
	}
	if strings.Contains(out.String(), "Filling the demo workspace") {
		t.Errorf("the second start filled the demo workspace again:\n%s", out.String())
	}
	if strings.Contains(out.String(), login[1]) || !strings.Contains(out.String(), "user password --email demo@tidemark.local --password-stdin") {
		t.Errorf("the second start printed the demo password, or not how to reset it:\n%s", out.String())
	}
	if got := send(again[1]); !strings.Contains(got, `"outcome":"duplicate"`) {
		t.Fatalf("send after restart: %s (want duplicate: data kept)", got)
	}
}
