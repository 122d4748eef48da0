package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/internal/embedpg"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/ingest"
)

// dataDir holds the embedded database and its generated encryption key.
const dataDir = ".tidemark"

// Connection pools of serve. Ingest, every write and the maintenance jobs
// share ingestPoolConns (unless DATABASE_URL sets pool_max_conns); a
// delivery holds one for a single pipelined round trip. The reads of the
// console and the API, with their sessions and sign-ins, get readPoolConns
// of their own: they serve a handful of operators and scripts, and each
// statement is stopped by the read timeout, so a burst of slow searches
// cannot take connections from ingest, nor a saturated ingest pool lock
// the operators out. Within it the read gate (web/httpx/readgate.go) caps
// each tenant and caller and keeps 2 connections for sessions and
// sign-ins. Other commands open the ingest pool only.
const (
	ingestPoolConns = 16
	readPoolConns   = 8
)

// database is an open store and how to release it.
type database struct {
	store    *postgres.Store
	embedded *embedpg.Cluster // nil when DATABASE_URL is used
	keys     [][]byte         // TIDEMARK_ENCRYPTION_KEY's keyring, which the queue uses too
	release  func()
	closed   sync.Once
}

// close releases the pools and stops the embedded cluster, once: both a
// node's pools service and the command's deferred call close it.
func (db *database) close() { db.closed.Do(db.release) }

// openOptions says what a command opens the database for.
type openOptions struct {
	// startEmbedded: without DATABASE_URL, serve starts the embedded
	// cluster; other commands use it only while a serve keeps it running,
	// and say so.
	startEmbedded bool
	// ingest: the command writes deliveries (serve, worker), so each
	// connection of its pool has the ingest statements planned when it is
	// made, and ingestWarmConns of them are kept open.
	ingest bool
	// migrate: apply the migrations (serve), on a connection of their own,
	// before the pool opens, so that no connection plans the ingest
	// statements against a database without their tables (PostgreSQL
	// would log an ERROR for each).
	migrate bool
	// verbose: the migrations applied are listed one a line (serve
	// --verbose), not summed up in one.
	verbose bool
	// readTimeout, when set (serve), gives the reads of the console and the
	// API a pool of their own whose statements each stop after it.
	readTimeout time.Duration
}

// ingestWarmConns is how many ingest connections serve and worker keep open
// and ready, made in the background when the pool starts and whenever one
// is retired: the connections that light load uses never make a delivery
// wait for their plans.
const ingestWarmConns = 4

// openDatabase connects to DATABASE_URL, or to the embedded cluster.
func (e cliEnv) openDatabase(ctx context.Context, o openOptions) (*database, error) {
	db := &database{release: func() {}}
	url := e.getenv("DATABASE_URL")
	embedded := url == ""
	if embedded {
		switch {
		case o.startEmbedded:
			cluster, err := embedpg.Start(ctx, dataDir, e.stderr)
			if err != nil {
				return nil, err
			}
			db.embedded = cluster
			url = cluster.URL()
		default:
			socket := filepath.Join(dataDir, "run", ".s.PGSQL.5432")
			if _, err := os.Stat(socket); err != nil {
				return nil, errors.New("DATABASE_URL is not set and no embedded database is running in ./" + dataDir +
					": set DATABASE_URL, or start `tidemark serve` in this folder first")
			}
			abs, _ := filepath.Abs(filepath.Join(dataDir, "run"))
			url = "postgres://tidemark@/tidemark?host=" + abs + "&sslmode=disable"
			fmt.Fprintf(e.stderr, "DATABASE_URL is not set: using the embedded database of the running tidemark serve in ./%s\n", dataDir)
		}
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		db.stopEmbedded()
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = ingestPoolConns
	}
	if o.ingest {
		cfg.AfterConnect = ingest.PrepareIngest
		if !strings.Contains(url, "pool_min_conns") {
			cfg.MinConns = min(ingestWarmConns, cfg.MaxConns)
		}
	}
	if o.migrate {
		if err := e.migrateFirst(ctx, cfg, o.verbose); err != nil {
			db.stopEmbedded()
			return nil, err
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		db.stopEmbedded()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		db.stopEmbedded()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	pools := postgres.Pools{Write: pool}
	if o.readTimeout > 0 {
		pools.Read, err = openReadPool(ctx, pool.Config(), o.readTimeout)
		if err != nil {
			pool.Close()
			db.stopEmbedded()
			return nil, err
		}
	}
	closePools := func() {
		if pools.Read != nil {
			pools.Read.Close()
		}
		pool.Close()
	}
	keys, err := e.encryptionKeys(embedded)
	db.keys = keys
	if err == nil {
		db.store, err = postgres.Open(pools, postgres.Options{Keys: keys, Logger: slog.New(slog.NewTextHandler(e.stderr, nil))})
	}
	if err != nil {
		closePools()
		db.stopEmbedded()
		return nil, err
	}
	db.release = func() { closePools(); db.stopEmbedded() }
	return db, nil
}

// migrateFirst applies the migrations through a small pool of plain
// connections, closed before the command's own pool opens.
func (e cliEnv) migrateFirst(ctx context.Context, cfg *pgxpool.Config, verbose bool) error {
	mc := cfg.Copy()
	mc.AfterConnect, mc.MinConns, mc.MaxConns = nil, 0, 2
	pool, err := pgxpool.NewWithConfig(ctx, mc)
	if err != nil {
		return fmt.Errorf("connect to database: %w", err)
	}
	defer pool.Close()
	if verbose {
		return postgres.Migrate(ctx, pool, e.stderr)
	}
	return postgres.MigrateSummary(ctx, pool, e.stderr)
}

// openReadPool opens the read pool of serve, configured as the ingest
// pool's cfg but whose statements each stop after timeout.
func openReadPool(ctx context.Context, cfg *pgxpool.Config, timeout time.Duration) (*pgxpool.Pool, error) {
	pool, err := pgxpool.NewWithConfig(ctx, postgres.ReadPoolConfig(cfg, readPoolConns, timeout))
	if err != nil {
		return nil, fmt.Errorf("connect to database (read pool): %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database (read pool): %w", err)
	}
	return pool, nil
}

func (db *database) stopEmbedded() {
	if db.embedded != nil {
		db.embedded.Stop()
	}
}

// keyFile is the embedded database's encryption key.
var keyFile = filepath.Join(dataDir, "encryption.key")

// encryptionKeys returns the keys of provider secrets: those in
// TIDEMARK_ENCRYPTION_KEY, else, for the embedded database only, the key
// file under ./.tidemark, generated on first use. A database of its own
// (DATABASE_URL) outlives this folder, so no key is ever made up for it:
// without TIDEMARK_ENCRYPTION_KEY it gets none, and the store refuses
// every operation on secrets while the rest works.
func (e cliEnv) encryptionKeys(embedded bool) ([][]byte, error) {
	if v := e.getenv("TIDEMARK_ENCRYPTION_KEY"); v != "" {
		return parseKeys("TIDEMARK_ENCRYPTION_KEY", v)
	}
	if !embedded {
		if _, err := os.Stat(keyFile); err == nil {
			fmt.Fprintf(e.stderr, "TIDEMARK_ENCRYPTION_KEY is not set; ./%s is the embedded database's key and is not used with DATABASE_URL "+
				"(if an earlier tidemark made it for this database, set TIDEMARK_ENCRYPTION_KEY from it)\n", keyFile)
		}
		return nil, nil
	}
	if b, err := os.ReadFile(keyFile); err == nil {
		return parseKeys(keyFile, string(b))
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	key := make([]byte, 32)
	rand.Read(key)
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("save generated encryption key: %w", err)
	}
	fmt.Fprintf(e.stderr, "generated an encryption key for the embedded database's provider secrets in %s\n", keyFile)
	return [][]byte{key}, nil
}

// parseKeys reads comma-separated keys, each the base64 of 32 bytes; the
// first seals new secrets, every one opens the secrets stored under it.
func parseKeys(source, list string) ([][]byte, error) {
	var keys [][]byte
	for i, part := range strings.Split(list, ",") {
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(part))
		if err != nil || len(key) != 32 {
			return nil, fmt.Errorf("%s: key %d is not the base64 of 32 bytes; create a key once with: openssl rand -base64 32", source, i+1)
		}
		keys = append(keys, key)
	}
	return keys, nil
}
