// Package postgres implements Tidemark's storage on PostgreSQL with pgx.
// Every SQL statement of the project lives here, and every statement on
// tenant-owned data filters by tenant.
//
// One rule for statements: each is a package-level constant ending in SQL
// (a named(...) variable on the ingest hot path) with @name parameters, cast
// where PostgreSQL cannot infer them (@x::text IS NULL), run with
// pgx.NamedArgs (st.args for named); no $n, no SQL literals in calls. DDL
// naming tables fills a constant template with pgx.Identifier{...}.Sanitize().
package postgres

import (
	ingestion "github.com/tidemark/tidemark/postgres/ingest" // not "ingest": the tests have a helper of that name
	"github.com/tidemark/tidemark/postgres/internal/pg"

	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
)

// Store is the PostgreSQL implementation of the domain services.
type Store struct {
	pool *pgxpool.Pool // ingest, writes, maintenance
	// read serves the reads of the console and the API, their sessions and
	// sign-ins, so that a saturated ingest pool leaves operators a way in
	// and a slow search cannot take connections from ingest. It is pool
	// until UseReadPool gives the reads their own.
	read *pgxpool.Pool
	keys *pg.Keyring
	log  *slog.Logger

	// secrets opens provider secrets with keys and logs those it cannot.
	secrets *pg.Secrets

	historyRetention time.Duration // see SetHistoryRetention

	// Writer is the ingest write path: Ingest, Endpoint, ListenForChanges,
	// EndpointCacheLive and LogRefusals are its.
	*ingestion.Writer
}

// New returns a Store on pool whose one key, encryptionKey (32 bytes),
// encrypts provider secrets at rest; it logs to slog.Default().
func New(pool *pgxpool.Pool, encryptionKey []byte) (*Store, error) {
	return Open(pool, Options{Keys: [][]byte{encryptionKey}})
}

// Options configure a Store beyond its pool.
type Options struct {
	// Keys (32 bytes each) encrypt provider secrets at rest: the first seals
	// new secrets, every one opens the secrets stored under it. Without
	// keys the store serves everything but provider secrets, whose
	// operations return ErrNoKey.
	Keys [][]byte
	// Logger receives errors that fail no request, such as a secret that
	// cannot be decrypted and is skipped. Default: slog.Default().
	Logger *slog.Logger
}

// Open returns a Store on pool configured by o.
func Open(pool *pgxpool.Pool, o Options) (*Store, error) {
	keys, err := pg.NewKeyring(o.Keys)
	if err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	secrets := pg.NewSecrets(keys, log)
	return &Store{pool: pool, read: pool, keys: keys, log: log, secrets: secrets, Writer: ingestion.New(pool, secrets, log)}, nil
}

// Pool returns the store's connection pool (ingest, writes, maintenance).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// UseReadPool makes the reads of the console and the API use p, typically
// one opened with ReadPoolConfig. Call it before SessionStore and before
// serving.
func (s *Store) UseReadPool(p *pgxpool.Pool) { s.read = p }

// DefaultReadTimeout bounds each read statement of the console and the API
// (serve --read-timeout).
const DefaultReadTimeout = 5 * time.Second

// ReadPoolConfig returns a copy of cfg for a read pool of at most maxConns
// connections, each of which stops any statement running longer than
// timeout (statement_timeout, SQLSTATE 57014), which the store answers as
// domain.ErrReadTimeout.
func ReadPoolConfig(cfg *pgxpool.Config, maxConns int32, timeout time.Duration) *pgxpool.Config {
	rc := cfg.Copy()
	rc.MaxConns = maxConns
	// The reads run no ingest statement: their connections are made on
	// demand and not prepared for ingest (PrepareIngest).
	rc.MinConns, rc.AfterConnect = 0, nil
	if rc.ConnConfig.RuntimeParams == nil {
		rc.ConnConfig.RuntimeParams = map[string]string{}
	}
	rc.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(max(timeout.Milliseconds(), 1), 10)
	rc.ConnConfig.RuntimeParams["application_name"] = "tidemark-read"
	return rc
}

// The store implements every domain service.
var (
	_ domain.TenantService   = (*Store)(nil)
	_ domain.ProviderService = (*Store)(nil)
	_ domain.TokenService    = (*Store)(nil)
	_ domain.EventService    = (*Store)(nil)
	_ domain.StatsService    = (*Store)(nil)
	_ domain.RecordService   = (*Store)(nil)
	_ domain.ConflictService = (*Store)(nil)
	_ domain.PeopleService   = (*Store)(nil)
	_ domain.OperatorService = (*Store)(nil)
	_ domain.AccessService   = (*Store)(nil)
	_ domain.IngestService   = (*Store)(nil)
)

// ErrNoKey is what every operation on provider secrets returns on a store
// opened without keys.
var ErrNoKey = pg.ErrNoKey
