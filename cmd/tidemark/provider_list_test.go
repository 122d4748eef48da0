package main

import (
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/migrations"
)

// TestProviderList: provider list prints a tenant's providers, one line
// each after a header, the name first and the columns aligned; an unknown
// tenant is refused as the other provider commands refuse it.
func TestProviderList(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": testdb.NewURL(t), "TIDEMARK_ENCRYPTION_KEY": testEncryptionKey}
	for _, args := range [][]string{{"tenant", "create", "acme"},
		{"provider", "create", "--tenant", "acme", "--provider", "crm", "--kind", "standard"},
		{"provider", "create", "--tenant", "acme", "--name", "hub", "--kind", "hubspot", "--secret", "hubspot-client-secret-0123456789"},
		{"provider", "rotate", "--tenant", "acme", "--provider", "crm"}} {
		if _, _, err := tidemark(t, env, "", args...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	if _, _, err := tidemark(t, env, "pat-na1-cli-token-0123456789\n", "provider", "update", "--tenant", "acme", "--provider", "hub",
		"--api-token-stdin", "--api-base-url", "http://127.0.0.1:8080", "--allow-private"); err != nil {
		t.Fatal(err)
	}
	out, _, err := tidemark(t, env, "", "provider", "list", "--tenant", "acme")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "NAME ") || !strings.HasPrefix(lines[1], "crm ") || !strings.HasPrefix(lines[2], "hub ") {
		t.Fatalf("provider list: want a header, crm and hub:\n%s", out)
	}
	for i, want := range [][]string{
		{"KIND", "SECRETS", "API CREDENTIALS", "WEBHOOK PATH"},
		{"standard", "2 active (rotating)", " - ", "/webhooks/acme/crm"},
		{"hubspot", "1 active", "access token", "/webhooks/acme/hub"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d lacks %q:\n%s", i, w, out)
			}
		}
	}
	// Aligned: each column starts where its header does.
	for _, col := range []struct{ header, crm, hub string }{{"KIND", "standard", "hubspot"}, {"SECRETS", "2 active", "1 active"},
		{"WEBHOOK PATH", "/webhooks/acme/crm", "/webhooks/acme/hub"}} {
		at := strings.Index(lines[0], col.header)
		if strings.Index(lines[1], col.crm) != at || strings.Index(lines[2], col.hub) != at {
			t.Errorf("column %s is not aligned:\n%s", col.header, out)
		}
	}

	_, _, want := tidemark(t, env, "", "provider", "rotate", "--tenant", "nobody", "--provider", "crm")
	if _, _, err := tidemark(t, env, "", "provider", "list", "--tenant", "nobody"); err == nil || want == nil || err.Error() != want.Error() {
		t.Errorf("provider list of an unknown tenant: %v; want what provider rotate says, %v", err, want)
	}
}

// TestProviderFlagAlias: the commands that name a provider take
// --provider, and --name as its alias; both given with different values
// are refused (exit status 2) and change nothing.
func TestProviderFlagAlias(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": testdb.NewURL(t), "TIDEMARK_ENCRYPTION_KEY": testEncryptionKey}
	if _, _, err := tidemark(t, env, "", "tenant", "create", "acme"); err != nil {
		t.Fatal(err)
	}
	_, _, err := tidemark(t, env, "", "provider", "create", "--tenant", "acme", "--provider", "crm", "--name", "other", "--kind", "standard")
	if err == nil || domain.ErrorCode(err) != domain.EINVALID ||
		err.Error() != `provider create: --provider "crm" and --name "other" (its alias) differ: give one` {
		t.Fatalf("--provider and --name differing: %v (%s), want a refusal, exit status 2", err, domain.ErrorCode(err))
	}
	if out, _, _ := tidemark(t, env, "", "provider", "list", "--tenant", "acme"); strings.Count(out, "\n") != 1 {
		t.Fatalf("the refused create made a provider:\n%s", out)
	}
	for _, args := range [][]string{
		{"provider", "create", "--tenant", "acme", "--provider", "crm", "--name", "crm", "--kind", "standard"},
		{"provider", "rotate", "--tenant", "acme", "--name", "crm"},
		{"provider", "rotate", "--tenant", "acme", "--provider", "crm"},
		{"provider", "retire", "--tenant", "acme", "--provider", "crm"},
	} {
		if _, _, err := tidemark(t, env, "", args...); err != nil {
			t.Errorf("%v: %v", args, err)
		}
	}
	for _, c := range []string{"create", "rotate", "retire"} {
		_, stderr, err := tidemark(t, env, "", "provider", c, "--help")
		synopsis, _, _ := strings.Cut(stderr, "\n\n")
		if err == nil || !strings.Contains(synopsis, "--provider NAME") || strings.Contains(synopsis, "--name") ||
			!strings.Contains(stderr, "\n  -name NAME\n    \tNAME: alias of --provider") {
			t.Errorf("provider %s --help: want --provider in the synopsis, --name described as its alias:\n%s", c, stderr)
		}
	}
}

// TestServeSumsUpMigrations: the first start of serve says in one line
// which migrations it applied; --verbose (or -v) lists them one a line.
func TestServeSumsUpMigrations(t *testing.T) {
	t.Parallel()
	files, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil || len(files) < 2 {
		t.Fatalf("migrations: %v, %v", files, err)
	}
	want := "applied " + strconv.Itoa(len(files)) + " migrations (" + files[0][:5] + " to " + files[len(files)-1][:5] + ") in "
	s := serveInProcess(t, testdb.NewEmptyURL(t))
	s.stop(t)
	if got := s.errOut.String(); !strings.Contains(got, want) || strings.Contains(got, "applied migration ") {
		t.Errorf("serve's first start: want the one line %q...:\n%s", want, got)
	}
	for _, v := range []string{"-v", "--verbose"} {
		s = serveInProcess(t, testdb.NewEmptyURL(t), v)
		s.stop(t)
		if got := regexp.MustCompile(`(?m)^applied migration \d{5}_\S+\.sql \(`).FindAllString(s.errOut.String(), -1); len(got) != len(files) {
			t.Errorf("serve %s: %d lines of applied migrations, want %d:\n%s", v, len(got), len(files), s.errOut.String())
		}
	}
}
