package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/cmd/tidemark/internal/demo"
	"github.com/tidemark/tidemark/internal/e2e"
)

// The README's tour, as a newcomer reads it: run on the default address
// with go run, the secret left for the reader to fill in.
const (
	readmeSelf   = "go run ./cmd/tidemark"
	readmeBase   = "http://127.0.0.1:8080"
	readmeSecret = "whsec_..."
)

// readmeTour returns the README's "A short tour" section.
func readmeTour(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, tour, ok := strings.Cut(string(b), "\n## A short tour\n")
	if !ok {
		t.Fatal(`README.md has no "## A short tour" section`)
	}
	tour, _, _ = strings.Cut(tour, "\n## ")
	return tour
}

// codeBlocks returns the indented code blocks of markdown, each without
// its indentation.
func codeBlocks(markdown string) []string {
	var blocks []string
	var cur []string
	for _, line := range strings.Split(markdown+"\n\n", "\n") {
		if code, ok := strings.CutPrefix(line, "    "); ok {
			cur = append(cur, code)
			continue
		}
		if line == "" && len(cur) > 0 {
			blocks = append(blocks, strings.Join(cur, "\n"))
			cur = nil
		}
	}
	return blocks
}

// oneLine is a shell command with its continuations and indentation
// collapsed, for comparing a printed command with the README's.
func oneLine(cmd string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(cmd, "\\\n", " ")), " ")
}

// TestReadmeTourCommands keeps the README's tour and serve's start-up output
// in step without starting anything: the first code block is the command
// serve prints.
func TestReadmeTourCommands(t *testing.T) {
	t.Parallel()
	blocks := codeBlocks(readmeTour(t))
	if len(blocks) < 3 {
		t.Fatalf("the tour has %d code blocks, want the send command, the stale one and the API calls", len(blocks))
	}
	if got, want := oneLine(blocks[0]), oneLine(demo.SendCommand(readmeSelf, readmeBase, readmeSecret)); got != want {
		t.Errorf("the README's first command differs from the one serve prints:\n README: %s\n  serve: %s", got, want)
	}
	if !strings.Contains(blocks[1], "--revision 1") || !strings.Contains(blocks[1], "--id evt-2") {
		t.Errorf("the second block is not an older revision under a new id:\n%s", blocks[1])
	}
}

// TestReadmeTour walks the README's short tour literally against a real
// serve started as the README says (no configuration: the embedded
// database and its demo), in a fresh folder: each command of the tour's
// code blocks runs in bash, with only the address, the binary and the
// printed secret filled in, and each step has the result the README says.
func TestReadmeTour(t *testing.T) {
	e2e.Require(t, "the go command, bash, curl and PostgreSQL's server binaries (the test builds tidemark and walks the README's tour)")
	t.Parallel()
	tour := readmeTour(t)
	blocks := codeBlocks(tour)
	if len(blocks) < 3 {
		t.Fatalf("the tour has %d code blocks, want the send command, the stale one and the API calls", len(blocks))
	}
	exe := buildTidemark(t)
	dir := t.TempDir()
	// The embedded server runs as the postgres user when we are root.
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "TIDEMARK_") || strings.HasPrefix(kv, "DATABASE_URL=")
	})
	srv := startChildIn(t, dir, exe, env, listening, "serve", "--addr", "127.0.0.1:0")
	base := listening.FindStringSubmatch(srv.stdout.String())[1]
	out := srv.stdout.String()

	// The first start prints the README's command with the secret.
	printed := regexp.MustCompile(`send a signed test event:\n((?:    .*\n)+)`).FindStringSubmatch(out)
	secret := regexp.MustCompile(`--secret (whsec_\S+)`).FindStringSubmatch(out)
	login := regexp.MustCompile(`demo@tidemark\.local / (\S+)`).FindStringSubmatch(out)
	if printed == nil || secret == nil || login == nil {
		t.Fatalf("the first start printed no send command, secret or login:\n%s", out)
	}
	generic := strings.NewReplacer(exe, readmeSelf, base, readmeBase, secret[1], readmeSecret).Replace(printed[1])
	if oneLine(generic) != oneLine(blocks[0]) {
		t.Errorf("serve printed another command than the README's:\n  serve: %s\n README: %s", oneLine(generic), oneLine(blocks[0]))
	}

	// Each block runs as written, the reader's values filled in.
	fill := strings.NewReplacer(readmeSelf, exe, readmeBase, base, readmeSecret, secret[1])
	shell := func(script string) string {
		t.Helper()
		cmd := exec.Command("bash", "-eo", "pipefail", "-c", fill.Replace(script))
		cmd.Dir, cmd.Env = dir, env
		got, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s\n%v:\n%s", script, err, got)
		}
		return string(got)
	}
	for _, step := range []struct {
		block   int
		outcome string
	}{{0, "applied"}, {0, "duplicate"}, {1, "stale"}} {
		if !strings.Contains(tour, "`"+step.outcome+"`") {
			t.Errorf("the tour does not name the outcome %s", step.outcome)
		}
		if got := shell(blocks[step.block]); !strings.HasPrefix(got, "200 OK\n") || !strings.Contains(got, `"outcome":"`+step.outcome+`"`) {
			t.Errorf("block %d: got %s, want 200 OK and %s", step.block+1, got, step.outcome)
		}
	}

	// The API calls each answer 200; the search finds the contact once the
	// indexer has seen it (it runs every few seconds).
	curl := `curl() { command curl -sS -w '\n=> HTTP %{http_code}\n' "$@"; }` + "\n"
	var answers []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		got := shell(curl + blocks[2])
		// The body of each call, then its status.
		answers = strings.Split(got, "=> HTTP ")
		if len(answers) != 4 || !strings.HasPrefix(answers[1], "200\n") || !strings.HasPrefix(answers[2], "200\n") ||
			!strings.HasPrefix(answers[3], "200\n") {
			t.Fatalf("the API calls did not each answer 200:\n%s", got)
		}
		if strings.Contains(answers[2], "c-1001") || time.Now().After(deadline) {
			break
		}
	}
	contact, stats, search := answers[0], answers[1], answers[2]
	if !strings.Contains(contact, `"VP Sales"`) || !strings.Contains(contact, "c-1001") {
		t.Errorf("the contact is not the VP Sales of revision 2:\n%s", contact)
	}
	if !strings.Contains(stats, `"stale"`) {
		t.Errorf("the stats have no stale count:\n%s", stats)
	}
	if !strings.Contains(search, "c-1001") {
		t.Errorf("the search for sales does not find c-1001:\n%s", search)
	}

	// The console's JSON containment example finds a demo contact.
	example := regexp.MustCompile("JSON containment such as `([^`]+)`").FindStringSubmatch(readmeTour(t))
	if example == nil {
		t.Fatal("the tour names no JSON containment example")
	}
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err := client.PostForm(base+"/login", url.Values{"email": {demo.Email}, "password": {login[1]}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	page := getPage(t, client, base+"/t/demo/events?contains="+url.QueryEscape(example[1]))
	if !strings.Contains(page, "c-2021") || strings.Contains(page, "No events match") {
		t.Errorf("the events filtered by %s do not list c-2021", example[1])
	}

	// Nothing went wrong meanwhile: in particular the paused demo
	// destination sends nothing and so logs nothing.
	time.Sleep(2 * time.Second)
	if logs := srv.stderr.String(); strings.Contains(logs, "level=ERROR") || strings.Contains(logs, "level=WARN") {
		t.Errorf("serve logged warnings or errors during the tour:\n%s", logs)
	}
}

// getPage GETs a console page and returns its HTML, failing on another
// status than 200.
func getPage(t *testing.T, client *http.Client, u string) string {
	t.Helper()
	resp, err := client.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", u, resp.StatusCode, b)
	}
	return string(b)
}

// bashIn is a runner of scripts in bash, in dir with env, that fails the
// test when one fails or prints secret, and returns what it printed.
func bashIn(t *testing.T, dir string, env []string, secret string) func(script string) string {
	return func(script string) string {
		t.Helper()
		cmd := exec.Command("bash", "-eo", "pipefail", "-c", script)
		var stderr strings.Builder
		cmd.Dir, cmd.Env, cmd.Stderr = dir, env, &stderr
		got, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s\n%v:\n%s%s", script, err, got, stderr.String())
		}
		if strings.Contains(string(got)+stderr.String(), secret) {
			t.Fatalf("%s printed the secret", script)
		}
		return string(got)
	}
}
