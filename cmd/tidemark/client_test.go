package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	tmclient "github.com/tidemark/tidemark/client/go"
	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/internal/testdb"
)

// TestGoClient: the Go client generated from docs/openapi.yaml
// (client/go), with a read-only token the CLI made, reads from a real serve
// the change a signed delivery made and the record it applied. Then the
// program of the client's README, built as a reader's module builds it,
// prints both and follows the feed to the next change.
func TestGoClient(t *testing.T) {
	e2e.Require(t, "the go command (the test builds tidemark and the client README's program)")
	t.Parallel()
	dbURL := testdb.NewURL(t)
	env := map[string]string{"DATABASE_URL": dbURL, "TIDEMARK_ENCRYPTION_KEY": testEncryptionKey}
	must := func(args ...string) string {
		t.Helper()
		out, _, err := tidemark(t, env, "", args...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return lastLine(out)
	}
	must("tenant", "create", "acme")
	secret := must("provider", "create", "--tenant", "acme", "--name", "crm", "--kind", "standard")
	token := must("token", "create", "--tenant", "acme", "--name", "go client", "--access", "read")
	srv := startServer(t, buildTidemark(t), serverEnv(dbURL, testEncryptionKey))

	// send delivers a snapshot of contact c-1001 as `tidemark send` signs
	// it; a 503 stored nothing and is sent again.
	send := func(revision, snapshot string) {
		t.Helper()
		args := []string{"send", "--url", srv.base + "/webhooks/acme/crm", "--secret", secret, "--id", "evt-" + revision,
			"--contact", "c-1001", "--revision", revision, "--snapshot", snapshot}
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			out, _, err := tidemark(t, env, "", args...)
			if err == nil && strings.Contains(out, `"outcome":"applied"`) {
				return
			}
			if !strings.HasPrefix(out, "503 ") || time.Now().After(deadline) {
				t.Fatalf("send revision %s: %v\n%s", revision, err, out)
			}
		}
	}
	send("3", `{"job_title":"VP Sales"}`)

	client, err := tmclient.NewClientWithResponses(srv.base, tmclient.WithToken(token))
	if err != nil {
		t.Fatal(err)
	}
	wait := float32(10)
	page, err := client.ListChangesWithResponse(t.Context(), "acme", &tmclient.ListChangesParams{Wait: &wait})
	if err != nil {
		t.Fatal(err)
	}
	if page.JSON200 == nil || len(page.JSON200.Changes) != 1 {
		t.Fatalf("the feed answered %s %s, want the one change", page.Status(), page.Body)
	}
	c := page.JSON200.Changes[0]
	if c.Type != tmclient.RecordApplied || c.Provider != "crm" || c.ObjectType != "contact" || c.ObjectID != "c-1001" ||
		c.Revision == nil || *c.Revision != 3 || c.Snapshot == nil || (*c.Snapshot)["job_title"] != "VP Sales" {
		t.Errorf("the change is not contact c-1001's revision 3 applied: %s", page.Body)
	}
	cursor := page.JSON200.NextCursor
	next, err := client.ListChangesWithResponse(t.Context(), "acme", &tmclient.ListChangesParams{After: &cursor})
	if err != nil {
		t.Fatal(err)
	}
	if next.JSON200 == nil || len(next.JSON200.Changes) != 0 || next.JSON200.NextCursor != cursor {
		t.Errorf("after the change the feed answered %s %s, want an empty page at the same cursor", next.Status(), next.Body)
	}

	record, err := client.GetRecordWithResponse(t.Context(), "acme", "crm", "contact", "c-1001")
	if err != nil {
		t.Fatal(err)
	}
	if r := record.JSON200; r == nil || r.Revision == nil || *r.Revision != 3 || r.Snapshot["job_title"] != "VP Sales" {
		t.Errorf("the record answered %s %s, want revision 3 with its snapshot", record.Status(), record.Body)
	}
	missing, err := client.GetRecordWithResponse(t.Context(), "acme", "crm", "contact", "c-none")
	if err != nil {
		t.Fatal(err)
	}
	if missing.JSON404 == nil || missing.JSON404.Error == "" {
		t.Errorf("a missing record answered %s %s, want 404 with its error", missing.Status(), missing.Body)
	}

	// The README's program; the argument only names it in the harness's
	// messages.
	changeLine := regexp.MustCompile(`(?m)^change \S+ record\.applied contact c-1001 \[job_title\]$`)
	readme := startChild(t, buildClientReadme(t), append(os.Environ(), "TIDEMARK_URL="+srv.base, "TIDEMARK_TOKEN="+token),
		changeLine, "readme")
	if out := readme.stdout.String(); !strings.HasPrefix(out, "record c-1001 map[job_title:VP Sales]\n") {
		t.Errorf("the README's program printed another record:\n%s", out)
	}
	send("4", `{"job_title":"CEO"}`)
	for deadline := time.Now().Add(time.Minute); len(changeLine.FindAllString(readme.stdout.String(), -1)) < 2; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the README's program did not print the next change within a minute:\n%s%s", readme.stdout.String(), readme.stderr.String())
		}
	}
}

// buildClientReadme builds the Go program of client/go/README.md in a
// module of its own that requires the client, replaced by this checkout's.
func buildClientReadme(t *testing.T) string {
	t.Helper()
	clientDir, err := filepath.Abs(filepath.Join("..", "..", "client", "go"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(clientDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	program := regexp.MustCompile("(?s)```go\n(package main\n.*?)```").FindSubmatch(readme)
	if program == nil {
		t.Fatal("client/go/README.md shows no Go program")
	}
	sums, err := os.ReadFile(filepath.Join(clientDir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	goMod := "module readme\n\ngo 1.26\n\nrequire github.com/tidemark/tidemark/client/go v0.0.0\n\n" +
		"replace github.com/tidemark/tidemark/client/go => " + clientDir + "\n"
	for name, content := range map[string][]byte{"go.mod": []byte(goMod), "go.sum": sums, "main.go": program[1]} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	exe := filepath.Join(dir, "readme")
	build := exec.Command("go", "build", "-mod=mod", "-o", exe, ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build of the README's program: %v\n%s", err, out)
	}
	return exe
}
