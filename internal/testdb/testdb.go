// Package testdb gives each test a fresh PostgreSQL database cloned from a
// migrated template.
//
// The server is, in order: the one TEST_DATABASE_URL names; the local
// server (socket /var/run/postgresql) if it answers; otherwise an embedded
// cluster (internal/embedpg) that this test process starts once, so
// `go test ./...` works on a machine with PostgreSQL's binaries and no
// running server. See embedded.go for where that cluster lives and when it
// stops.
//
// With TIDEMARK_TEST_CITUS=1 it is a Citus cluster instead (citus.go).
//
// When no server can be had, tests are skipped, except with CI=true, where
// they fail.
package testdb

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/tidemark/tidemark/internal/citustest"
	"github.com/tidemark/tidemark/migrations"
)

// localURL is the local server of every development and CI machine.
const localURL = "postgres:///postgres?host=/var/run/postgresql&sslmode=disable"

// server is a PostgreSQL server tests may create databases on.
type server struct {
	url      string // maintenance connection string
	embedded bool   // the embedded cluster of this process
	citus    *citustest.Cluster
}

var shared struct {
	once sync.Once
	srv  server
	err  error
}

// defaultServer resolves the server once per test process.
func defaultServer() (server, error) {
	shared.once.Do(func() {
		shared.srv, shared.err = resolve(context.Background(), os.Getenv("TEST_DATABASE_URL"), localURL)
	})
	return shared.srv, shared.err
}

// resolve picks the server: explicit if set (no fallback: a named server
// that does not answer is an error), else local if it answers, else the
// embedded cluster. The error says what was tried.
func resolve(ctx context.Context, explicit, local string) (server, error) {
	if OnCitus() {
		c, err := startCitus(ctx)
		if err != nil {
			return server{}, fmt.Errorf("TIDEMARK_TEST_CITUS=1: %w", err)
		}
		return server{url: c.DatabaseURL("postgres"), citus: c}, nil
	}
	if explicit != "" {
		if err := ping(ctx, explicit); err != nil {
			return server{}, fmt.Errorf("TEST_DATABASE_URL=%q does not answer: %w", explicit, err)
		}
		return server{url: explicit}, nil
	}
	localErr := ping(ctx, local)
	if localErr == nil {
		return server{url: local}, nil
	}
	u, err := startEmbedded(ctx)
	if err != nil {
		return server{}, fmt.Errorf("no test database: TEST_DATABASE_URL is not set, the local server (%s) does not answer (%v), and the embedded cluster did not start: %w", local, localErr, err)
	}
	return server{url: u, embedded: true}, nil
}

func ping(ctx context.Context, u string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	return c.Close(ctx)
}

// mustServer returns the test server or ends t: skipped, or failed with
// CI=true.
func mustServer(t testing.TB) server {
	t.Helper()
	srv, err := defaultServer()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return srv
}

// ServerURL returns the maintenance connection string of the test server,
// starting the embedded cluster if that is the one in use.
func ServerURL(t testing.TB) string {
	t.Helper()
	return mustServer(t).url
}

// New creates a fresh migrated database for t, dropped when t ends, and
// returns a small pool on it.
func New(t testing.TB) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// NewURL creates a fresh migrated database for t and returns its URL.
func NewURL(t testing.TB) string {
	t.Helper()
	return mustServer(t).newURL(t, true)
}

// NewEmptyURL creates an empty database (no migrations) for t and returns
// its URL.
func NewEmptyURL(t testing.TB) string {
	t.Helper()
	return mustServer(t).newURL(t, false)
}

// newURL creates a database, cloned from the migrated template when
// migrated, dropped when t ends.
func (s server) newURL(t testing.TB, migrated bool) string {
	t.Helper()
	if s.citus != nil {
		return newCitusURL(t, s.citus, migrated)
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, s.url)
	if err != nil {
		t.Fatalf("connect to the test server: %v", err)
	}
	defer admin.Close(ctx)

	create := "CREATE DATABASE %s"
	if migrated {
		tpl, err := s.template(ctx, admin)
		if err != nil {
			t.Fatalf("prepare template database: %v", err)
		}
		create += " TEMPLATE " + tpl
	}
	name := "tidemark_test_" + randomHex(6)
	if _, err := admin.Exec(ctx, fmt.Sprintf(create, name)); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() { s.drop(name) })
	return withDatabase(s.url, name)
}

// template returns the name of a database migrated to the current
// migrations, creating it once per migration set. An advisory lock keeps
// test binaries running in parallel from building it twice.
func (s server) template(ctx context.Context, admin *pgx.Conn) (string, error) {
	name := "tidemark_tpl_" + migrationsHash()
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(7310001)"); err != nil {
		return "", err
	}
	defer admin.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(7310001)")

	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	building := name + "_building"
	if _, err := admin.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", building)); err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+building); err != nil {
		return "", err
	}
	if err := migrate(ctx, withDatabase(s.url, building)); err != nil {
		return "", fmt.Errorf("migrate %s: %w", building, err)
	}
	if err := addPastDays(ctx, withDatabase(s.url, building)); err != nil {
		return "", fmt.Errorf("prepare %s: %w", building, err)
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s RENAME TO %s", building, name)); err != nil {
		return "", err
	}
	return name, nil
}

// drop is best effort: a database left behind by a failed drop costs disk,
// not correctness.
func (s server) drop(name string) {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return
	}
	defer c.Close(ctx)
	c.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name))
}

func migrate(ctx context.Context, u string) error {
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		return err
	}
	defer pool.Close()
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS)
	if err != nil {
		return err
	}
	_, err = p.Up(ctx)
	return err
}

// pastDays is how many days before a template's own the logs have
// daily partitions for.
const pastDays = 7

// addPastDays gives the logs of a database just migrated daily partitions
// for the pastDays days before today. Migrations start the logs' partitions
// on the day they run (migration 00010), and tests date deliveries hours
// back (now - 3h): a template built after midnight UTC held no partition
// for them, and their inserts failed until the day had grown older than
// their offset.
func addPastDays(ctx context.Context, u string) error {
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	today := time.Now().UTC().Truncate(24 * time.Hour)
	for _, log := range []string{"deliveries", "events"} {
		for n := 1; n <= pastDays; n++ {
			day := today.AddDate(0, 0, -n)
			name := pgx.Identifier{log + "_p" + day.Format("20060102")}.Sanitize()
			ddl := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s')",
				name, log, day.Format(time.RFC3339), day.AddDate(0, 0, 1).Format(time.RFC3339))
			if _, err := conn.Exec(ctx, ddl); err != nil {
				return fmt.Errorf("partition %s: %w", name, err)
			}
		}
	}
	return nil
}

func migrationsHash() string {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.FS, path)
		h.Write([]byte(path))
		h.Write(b)
		return err
	})
	if err != nil {
		panic(fmt.Sprintf("read embedded migrations: %v", err))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func withDatabase(server, name string) string {
	u, err := url.Parse(server)
	if err != nil {
		panic(fmt.Sprintf("test server URL is not a URL: %v", err))
	}
	u.Path = "/" + name
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b) + fmt.Sprintf("%x", time.Now().UnixNano()%4096)
}
