package embedpg

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// clusterDir returns a fresh dir the postgres user can reach even when the
// test runs as root: t.TempDir() and its parent are created 0700.
func clusterDir(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	for _, d := range []string{tmp, filepath.Dir(tmp)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(tmp, "tm")
}

func start(t *testing.T, dir string, log io.Writer) *Cluster {
	t.Helper()
	c, err := Start(context.Background(), dir, io.MultiWriter(log, t.Output()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	return c
}

func TestStartReusesData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := clusterDir(t)

	var log strings.Builder
	c := start(t, dir, &log)
	if !strings.Contains(log.String(), "initialising PostgreSQL cluster") {
		t.Errorf("first start did not report initdb; log:\n%s", log.String())
	}
	conn, err := pgx.Connect(ctx, c.URL())
	if err != nil {
		t.Fatalf("connect %s: %v", c.URL(), err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t (v text); INSERT INTO t VALUES ('kept')"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	checkPrivate(t, dir)
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}

	// As an earlier version left them: the next start narrows them again.
	for _, d := range []string{dir, filepath.Join(dir, "run")} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "postgres.log"), 0o644); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	c = start(t, dir, &log)
	if strings.Contains(log.String(), "initialising") {
		t.Errorf("second start re-initialised the cluster; log:\n%s", log.String())
	}
	checkPrivate(t, dir)
	conn, err = pgx.Connect(ctx, c.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SELECT v FROM t").Scan(&v); err != nil || v != "kept" {
		t.Fatalf("row after restart = %q, %v; want \"kept\"", v, err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
}

// checkPrivate fails t unless the cluster's folders, log and socket are
// the owner's alone.
func checkPrivate(t *testing.T, dir string) {
	t.Helper()
	for path, want := range map[string]os.FileMode{
		dir: 0o700, filepath.Join(dir, "run"): 0o700, filepath.Join(dir, "pgdata"): 0o700,
		filepath.Join(dir, "postgres.log"): 0o600, filepath.Join(dir, "run", ".s.PGSQL."+port): 0o700,
	} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s has mode %o, want %o", path, got, want)
		}
	}
}

// TestStopImmediateRecovers crashes the server with a committed row and
// an open transaction: the next Start recovers the one and not the other.
func TestStopImmediateRecovers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := clusterDir(t)
	c := start(t, dir, io.Discard)
	conn, err := pgx.Connect(ctx, c.URL())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t (v text); INSERT INTO t VALUES ('committed')"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "BEGIN; INSERT INTO t VALUES ('open')"); err != nil {
		t.Fatal(err)
	}
	if err := c.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop after StopImmediate: %v", err)
	}

	c = start(t, dir, io.Discard)
	log, err := os.ReadFile(filepath.Join(dir, "postgres.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "automatic recovery in progress") {
		t.Errorf("the second start did not recover from the WAL; log:\n%s", log)
	}
	conn, err = pgx.Connect(ctx, c.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var rows string
	if err := conn.QueryRow(ctx, "SELECT string_agg(v, ',') FROM t").Scan(&rows); err != nil || rows != "committed" {
		t.Fatalf("rows after the crash = %q, %v; want \"committed\"", rows, err)
	}
}

func TestNoBinaries(t *testing.T) {
	old := searchGlob
	searchGlob = filepath.Join(t.TempDir(), "*", "bin")
	t.Cleanup(func() { searchGlob = old })
	t.Setenv("PATH", "")

	_, err := Start(context.Background(), clusterDir(t), io.Discard)
	if !errors.Is(err, ErrNoBinaries) {
		t.Fatalf("err = %v, want ErrNoBinaries", err)
	}
	if !strings.Contains(err.Error(), "apt-get install postgresql") {
		t.Errorf("error does not say what to install: %v", err)
	}
}

func TestSecondStartRefused(t *testing.T) {
	t.Parallel()
	dir := clusterDir(t)
	start(t, dir, io.Discard)
	c, err := Start(context.Background(), dir, io.Discard)
	if err == nil {
		c.Stop()
		t.Fatal("second Start on a running cluster succeeded")
	}
	if !strings.Contains(err.Error(), "another tidemark serve appears to be running on "+dir) {
		t.Errorf("unclear error: %v", err)
	}
}

func TestSocketPathTooLong(t *testing.T) {
	t.Parallel()
	parent := clusterDir(t)
	if err := os.Mkdir(parent, 0o755); err != nil { // as root, the postgres user must enter it
		t.Fatal(err)
	}
	dir := filepath.Join(parent, strings.Repeat("x", 100))
	_, err := Start(context.Background(), dir, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "over the Unix limit") {
		t.Fatalf("err = %v, want socket path length error", err)
	}
}

// Run as root from a folder the postgres user cannot enter (a private
// home), serve starts anyway: the cluster lives in a folder of its own
// under relocateRoot, which it says, and the next start finds its data
// there; other commands find its socket under dir/run.
func TestRootUntraversableParentRelocates(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root hands the cluster to the postgres user")
	}
	ctx := context.Background()
	old := relocateRoot
	relocateRoot = clusterDir(t) // not parallel: it sets the package's variable
	t.Cleanup(func() { relocateRoot = old })
	private := t.TempDir()
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(private, "tm")
	// As a start that refused left it.
	for _, d := range []string{filepath.Join(dir, "run"), filepath.Join(dir, "pgdata")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	alt := filepath.Join(relocateRoot, relocatedName(real))

	var log strings.Builder
	c := start(t, dir, &log)
	if want := "lives in " + alt + " (the postgres user, which runs it, cannot enter " + filepath.Dir(dir) + ")"; !strings.Contains(log.String(), want) {
		t.Errorf("the start does not say where the cluster lives (%q); log:\n%s", want, log.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "run", ".s.PGSQL."+port)); err != nil {
		t.Errorf("no socket under %s/run for the other commands: %v", dir, err)
	}
	conn, err := pgx.Connect(ctx, c.URL())
	if err != nil {
		t.Fatalf("connect %s: %v", c.URL(), err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE t (v text); INSERT INTO t VALUES ('kept')"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	for path, want := range map[string]os.FileMode{relocateRoot: 0o755, alt: 0o700, filepath.Join(alt, "pgdata"): 0o700,
		filepath.Join(alt, "run"): 0o700, filepath.Join(dir, "postgres.log"): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want mode %o", path, fi, err, want)
		}
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}

	log.Reset()
	c = start(t, dir, &log)
	if strings.Contains(log.String(), "initialising") || !strings.Contains(log.String(), "lives in "+alt) {
		t.Errorf("the second start did not find the cluster in %s; log:\n%s", alt, log.String())
	}
	conn, err = pgx.Connect(ctx, c.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v string
	if err := conn.QueryRow(ctx, "SELECT v FROM t").Scan(&v); err != nil || v != "kept" {
		t.Fatalf("row after restart = %q, %v; want \"kept\"", v, err)
	}
}

// A cluster whose data is under dir already stays there: when the
// postgres user can no longer enter dir, the start refuses, saying where
// the data is, rather than starting an empty cluster elsewhere.
func TestRootKeepsDataInPlace(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("only root hands the cluster to the postgres user")
	}
	dir := clusterDir(t)
	start(t, dir, io.Discard).Stop()
	if err := os.Chmod(filepath.Dir(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	c, err := Start(context.Background(), dir, io.Discard)
	if err == nil {
		c.Stop()
		t.Fatal("Start moved the cluster away from its data")
	}
	if !strings.Contains(err.Error(), "where the cluster's data is ("+filepath.Join(dir, "pgdata")+")") || !strings.Contains(err.Error(), "DATABASE_URL") {
		t.Fatalf("err = %v, want one naming the data's folder", err)
	}
}
