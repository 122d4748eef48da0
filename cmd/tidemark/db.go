package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/internal/embedpg"
	"github.com/tidemark/tidemark/postgres"
)

// dataDir holds the embedded database and the generated encryption key.
const dataDir = ".tidemark"

// Connection pools of serve. Ingest, every write and the maintenance jobs
// share ingestPoolConns (unless DATABASE_URL sets pool_max_conns); a
// delivery holds one for a single pipelined round trip. The reads of the
// console and the API, with their sessions and sign-ins, get readPoolConns
// of their own: they serve a handful of operators and scripts, and each
// statement is stopped by the read timeout, so a burst of slow searches
// cannot take connections from ingest, nor a saturated ingest pool lock
// the operators out. Other commands open the ingest pool only.
const (
	ingestPoolConns = 16
	readPoolConns   = 8
)

// database is an open store and how to release it.
type database struct {
	store    *postgres.Store
	embedded *embedpg.Cluster // nil when DATABASE_URL is used
	close    func()
}

// openDatabase connects to DATABASE_URL. Without it, startEmbedded decides:
// serve starts the embedded cluster; other commands use it only while a
// serve keeps it running, and say so.
func (e cliEnv) openDatabase(ctx context.Context, startEmbedded bool) (*database, error) {
	db := &database{close: func() {}}
	url := e.getenv("DATABASE_URL")
	if url == "" {
		switch {
		case startEmbedded:
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
	key, err := e.encryptionKey()
	if err == nil {
		db.store, err = postgres.New(pool, key)
	}
	if err != nil {
		pool.Close()
		db.stopEmbedded()
		return nil, err
	}
	db.close = func() { pool.Close(); db.stopEmbedded() }
	return db, nil
}

// useReadPool opens the read pool of serve, whose statements each stop
// after timeout, and gives it to the store.
func (db *database) useReadPool(ctx context.Context, timeout time.Duration) error {
	pool, err := pgxpool.NewWithConfig(ctx, postgres.ReadPoolConfig(db.store.Pool().Config(), readPoolConns, timeout))
	if err != nil {
		return fmt.Errorf("connect to database (read pool): %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return fmt.Errorf("connect to database (read pool): %w", err)
	}
	db.store.UseReadPool(pool)
	closeIngest := db.close
	db.close = func() { pool.Close(); closeIngest() }
	return nil
}

func (db *database) stopEmbedded() {
	if db.embedded != nil {
		db.embedded.Stop()
	}
}

// encryptionKey reads TIDEMARK_ENCRYPTION_KEY, or the key file under
// ./.tidemark, generating it on first use.
func (e cliEnv) encryptionKey() ([]byte, error) {
	if v := e.getenv("TIDEMARK_ENCRYPTION_KEY"); v != "" {
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v))
		if err != nil || len(key) != 32 {
			return nil, errors.New("TIDEMARK_ENCRYPTION_KEY must be the base64 of 32 random bytes (for example: openssl rand -base64 32)")
		}
		return key, nil
	}
	path := filepath.Join(dataDir, "encryption.key")
	if b, err := os.ReadFile(path); err == nil {
		key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(key) != 32 {
			return nil, fmt.Errorf("%s does not hold the base64 of 32 bytes", path)
		}
		return key, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	key := make([]byte, 32)
	rand.Read(key)
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("save generated encryption key: %w", err)
	}
	fmt.Fprintf(e.stderr, "generated an encryption key for provider secrets in %s; set TIDEMARK_ENCRYPTION_KEY to share one key between nodes\n", path)
	return key, nil
}
