package testdb

import (
	"context"
	"errors"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/internal/embedpg"
	"github.com/tidemark/tidemark/migrations"
)

// silent is a local server that cannot answer: nothing listens on port 1.
const silent = "postgres://root@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=2"

// TestFallsBackToEmbeddedCluster: with no TEST_DATABASE_URL and a local
// server that does not answer, tests get a migrated database from the
// embedded cluster.
func TestFallsBackToEmbeddedCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := resolve(ctx, "", silent)
	if errors.Is(err, embedpg.ErrNoBinaries) && os.Getenv("CI") != "true" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !srv.embedded {
		t.Fatalf("resolved to %s, want the embedded cluster", srv.url)
	}

	u := srv.newURL(t, true)
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	if host := parsed.Query().Get("host"); !strings.HasPrefix(host, clusterRoot()+string(filepath.Separator)) {
		t.Errorf("database URL %s: host %q is not a socket dir under %s", u, host, clusterRoot())
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatalf("connect %s: %v", u, err)
	}
	defer conn.Close(ctx)

	sqlFiles, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil || len(sqlFiles) == 0 {
		t.Fatalf("migrations: %v, %d files", err, len(sqlFiles))
	}
	var applied int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM goose_db_version WHERE version_id > 0 AND is_applied").Scan(&applied); err != nil {
		t.Fatalf("read goose_db_version: %v", err)
	}
	if applied != len(sqlFiles) {
		t.Errorf("%d migrations applied, want %d", applied, len(sqlFiles))
	}
	var tenants *string
	if err := conn.QueryRow(ctx, "SELECT to_regclass('tenants')::text").Scan(&tenants); err != nil || tenants == nil {
		t.Errorf("table tenants missing: %v", err)
	}

	// The process starts one cluster: asking again hands out the same one.
	again, err := resolve(ctx, "", silent)
	if err != nil || again.url != srv.url {
		t.Errorf("second resolve = %s, %v; want %s", again.url, err, srv.url)
	}
}

// TestNamedServerHasNoFallback: a TEST_DATABASE_URL that does not answer is
// an error, not a reason to use another server.
func TestNamedServerHasNoFallback(t *testing.T) {
	t.Parallel()
	_, err := resolve(context.Background(), silent, localURL)
	if err == nil || !strings.Contains(err.Error(), "TEST_DATABASE_URL") {
		t.Fatalf("err = %v, want TEST_DATABASE_URL does not answer", err)
	}
}

// TestNewURL hands out a migrated database on the default server, whichever
// it is.
func TestNewURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM goose_db_version").Scan(&n); err != nil || n == 0 {
		t.Fatalf("goose_db_version: %d rows, %v", n, err)
	}
}
