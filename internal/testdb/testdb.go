// Package testdb gives each test a fresh PostgreSQL database cloned from a
// migrated template, on the server named by TEST_DATABASE_URL (default: the
// local server). With CI=true an unreachable server fails the test instead
// of skipping it.
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
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/tidemark/tidemark/migrations"
)

const defaultURL = "postgres:///postgres?host=/var/run/postgresql&sslmode=disable"

// ServerURL returns the maintenance connection string of the test server.
func ServerURL() string {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return u
	}
	return defaultURL
}

// New creates a fresh migrated database for t, dropped when t ends, and
// returns a small pool on it.
func New(t testing.TB) *pgxpool.Pool {
	t.Helper()
	u := NewURL(t)
	cfg, err := pgxpool.ParseConfig(u)
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
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("test database server unreachable (TEST_DATABASE_URL=%q): %v", ServerURL(), err)
		}
		t.Skipf("test database server unreachable (set TEST_DATABASE_URL): %v", err)
	}
	defer admin.Close(ctx)

	tpl, err := template(ctx, admin)
	if err != nil {
		t.Fatalf("prepare template database: %v", err)
	}
	name := "tidemark_test_" + randomHex(6)
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s", name, tpl)); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() { dropDatabase(name) })
	return withDatabase(ServerURL(), name)
}

// template returns the name of a database migrated to the current
// migrations, creating it once per migration set. An advisory lock keeps
// test binaries running in parallel from building it twice.
func template(ctx context.Context, admin *pgx.Conn) (string, error) {
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
	admin.Exec(ctx, fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", building))
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+building); err != nil {
		return "", err
	}
	if err := migrate(ctx, withDatabase(ServerURL(), building)); err != nil {
		return "", err
	}
	if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s RENAME TO %s", building, name)); err != nil {
		return "", err
	}
	return name, nil
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

func migrationsHash() string {
	h := sha256.New()
	fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := fs.ReadFile(migrations.FS, path)
			h.Write([]byte(path))
			h.Write(b)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func withDatabase(server, name string) string {
	u, err := url.Parse(server)
	if err != nil {
		panic(fmt.Sprintf("TEST_DATABASE_URL is not a URL: %v", err))
	}
	u.Path = "/" + name
	return u.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b) + fmt.Sprintf("%x", time.Now().UnixNano()%4096)
}

// NewEmptyURL creates an empty database (no migrations) for t and returns
// its URL.
func NewEmptyURL(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		t.Fatalf("test database server unreachable: %v", err)
	}
	defer admin.Close(ctx)
	name := "tidemark_test_" + randomHex(6)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() { dropDatabase(name) })
	return withDatabase(ServerURL(), name)
}

func dropDatabase(name string) {
	c, err := pgx.Connect(context.Background(), ServerURL())
	if err != nil {
		return
	}
	defer c.Close(context.Background())
	c.Exec(context.Background(), fmt.Sprintf("DROP DATABASE IF EXISTS %s WITH (FORCE)", name))
}
