package postgres

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/internal/testdb"
)

func TestZZProbeSeed(t *testing.T) {
	if os.Getenv("PROBE") == "" {
		t.Skip()
	}
	ctx := context.Background()
	u := testdb.NewURL(t)
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := New(pool, testKey)
	if _, err := seedConsoleEvents(ctx, s, "acme", 1_000_000, time.Now()); err != nil {
		t.Fatal(err)
	}
	pool.Close()
	parsed, _ := url.Parse(u)
	name := strings.TrimPrefix(parsed.Path, "/")
	admin, err := pgx.Connect(ctx, testdb.ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE tidemark_probe_overview TEMPLATE "+name); err != nil {
		t.Fatal(err)
	}
}
