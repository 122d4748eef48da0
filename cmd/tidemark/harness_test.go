package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/testdb"
)

// The harness of the tests that run tidemark as a process: build it, start
// serve or worker, wait until it is ready, load it, stop it.

// child is a tidemark serve or worker process.
type child struct {
	cmd    *exec.Cmd
	base   string // serve's http://127.0.0.1:port
	stdout *syncBuffer
	stderr *syncBuffer
	exited chan struct{}
}

// buildTidemark builds this command once per test into a temporary folder.
func buildTidemark(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "tidemark")
	out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return exe
}

// startChild runs exe with args and env, and waits until its standard
// output matches ready. The process is killed when t ends.
func startChild(t *testing.T, exe string, env []string, ready *regexp.Regexp, args ...string) *child {
	t.Helper()
	return startChildIn(t, t.TempDir(), exe, env, ready, args...)
}

// startChildIn is startChild in the working directory dir.
func startChildIn(t *testing.T, dir, exe string, env []string, ready *regexp.Regexp, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(exe, args...), stdout: &syncBuffer{}, stderr: &syncBuffer{}, exited: make(chan struct{})}
	c.cmd.Env, c.cmd.Dir = env, dir
	c.cmd.Stdout, c.cmd.Stderr = c.stdout, c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", args[0], err)
	}
	go func() { c.cmd.Wait(); close(c.exited) }()
	t.Cleanup(c.kill)
	deadline := time.After(2 * time.Minute)
	for !ready.MatchString(c.stdout.String()) {
		select {
		case <-c.exited:
			t.Fatalf("%s exited before it was ready: %v\n%s%s", args[0], c.cmd.ProcessState, c.stdout.String(), c.stderr.String())
		case <-deadline:
			t.Fatalf("%s was not ready within 2 minutes:\n%s%s", args[0], c.stdout.String(), c.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return c
}

var listening = regexp.MustCompile(`Tidemark is listening on (http://\S+)`)

// startServer runs `tidemark serve` on a free port with env and extra
// flags, and waits until it says where it listens.
func startServer(t *testing.T, exe string, env []string, extra ...string) *child {
	t.Helper()
	c := startChild(t, exe, env, listening, append([]string{"serve", "--addr", "127.0.0.1:0"}, extra...)...)
	c.base = listening.FindStringSubmatch(c.stdout.String())[1]
	return c
}

// startWorker runs `tidemark worker` and waits until it consumes.
func startWorker(t *testing.T, exe string, env []string, args ...string) *child {
	t.Helper()
	return startChild(t, exe, env, regexp.MustCompile(`Tidemark worker is consuming`), append([]string{"worker"}, args...)...)
}

// kill sends SIGKILL (no shutdown, no deferred work) and waits for the
// process to be gone.
func (c *child) kill() {
	c.cmd.Process.Kill()
	<-c.exited
}

// terminate sends SIGTERM, as a service manager stopping the node does,
// and returns the process's exit status once it is gone, or -1 if it was
// still running after wait (then it is killed).
func (c *child) terminate(wait time.Duration) int {
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
		return c.cmd.ProcessState.ExitCode()
	case <-time.After(wait):
		c.kill()
		return -1
	}
}

// serverEnv is the environment of the child: ours without Tidemark's own
// settings, plus the database and the encryption key.
func serverEnv(dbURL, key string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "TIDEMARK_") || strings.HasPrefix(kv, "DATABASE_URL=")
	})
	return append(env, "DATABASE_URL="+dbURL, "TIDEMARK_ENCRYPTION_KEY="+key)
}

// checkerPool is the test's own small pool, named so that awaitBackends
// does not wait for it.
func checkerPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 2
	cfg.ConnConfig.RuntimeParams["application_name"] = crashChecker
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// tailLines returns the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}

// scanAll runs sql for the tenant, scans each row into dest and calls fn
// after each.
func scanAll(t *testing.T, pool *pgxpool.Pool, sql string, tenantID int64, dest []any, fn func()) {
	t.Helper()
	rows, err := pool.Query(context.Background(), sql, tenantID)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		fn()
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func queryInt(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// crashChecker is the application name of the test's own connections.
const crashChecker = "tidemark-crash-test"

// awaitBackends waits until the killed server's database sessions are
// gone. A transaction whose last message reached PostgreSQL before the kill
// still commits, possibly after the process died; counting before then
// would miss it.
func awaitBackends(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for queryInt(t, pool, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND backend_type = 'client backend' AND application_name <> $1`, crashChecker) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the killed server's database sessions did not end within 2 minutes")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// crashProviders creates the crash tenant and, for each name in kinds, a
// provider of that kind, and returns their signing secrets by name.
func crashProviders(t *testing.T, env map[string]string, kinds map[string]string) map[string]string {
	t.Helper()
	if _, _, err := tidemark(t, env, "", "tenant", "create", crashTenant); err != nil {
		t.Fatalf("tenant create: %v", err)
	}
	secrets := map[string]string{}
	for name, kind := range kinds {
		out, _, err := tidemark(t, env, "", "provider", "create", "--tenant", crashTenant, "--name", name, "--kind", kind)
		if err != nil {
			t.Fatalf("provider create %s: %v", kind, err)
		}
		secrets[name] = lastLine(out)
	}
	return secrets
}

// crashSetup creates the crash tenant with its standard and HubSpot
// providers on a fresh database and returns its URL, the secrets, a
// checker pool and the tenant's id.
func crashSetup(t *testing.T) (string, map[string]string, *pgxpool.Pool, int64) {
	t.Helper()
	dbURL := testdb.NewURL(t)
	env := map[string]string{"DATABASE_URL": dbURL, "TIDEMARK_ENCRYPTION_KEY": crashKey}
	secrets := crashProviders(t, env, map[string]string{crashStandard: provider.Standard.Name(), crashHubSpot: "hubspot"})
	pool := checkerPool(t, dbURL)
	return dbURL, secrets, pool, int64(queryInt(t, pool, `SELECT id FROM tenants WHERE slug = $1`, crashTenant))
}

const crashKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
