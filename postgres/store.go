// Package postgres implements Tidemark's storage on PostgreSQL with pgx:
// the CRUD services by noun here, the engines (maintain, reconcile, search,
// replay, ...) in the packages under it, and Store, which composes them.
// Every SQL statement of the project lives in these packages, and every
// statement on tenant-owned data filters by tenant.
//
// One rule for statements: each is a package-level constant ending in SQL
// (a pg.Named(...) variable on the ingest hot path) with @name parameters, cast
// where PostgreSQL cannot infer them (@x::text IS NULL), run with
// pgx.NamedArgs (st.args for named); no $n, no SQL literals in calls. DDL
// naming tables fills a constant template with pgx.Identifier{...}.Sanitize().
package postgres

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/domain/reconciliation"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/postgres/access"
	"github.com/tidemark/tidemark/postgres/alertcheck"
	"github.com/tidemark/tidemark/postgres/alerts"
	"github.com/tidemark/tidemark/postgres/apicreds"
	"github.com/tidemark/tidemark/postgres/apps"
	"github.com/tidemark/tidemark/postgres/auditlog"
	"github.com/tidemark/tidemark/postgres/backfills"
	"github.com/tidemark/tidemark/postgres/cdc"
	"github.com/tidemark/tidemark/postgres/changefeed"
	"github.com/tidemark/tidemark/postgres/deliverylog"
	"github.com/tidemark/tidemark/postgres/destinations"
	"github.com/tidemark/tidemark/postgres/ingest"
	"github.com/tidemark/tidemark/postgres/internal/pg"
	"github.com/tidemark/tidemark/postgres/lists"
	"github.com/tidemark/tidemark/postgres/maintain"
	"github.com/tidemark/tidemark/postgres/outbound"
	"github.com/tidemark/tidemark/postgres/people"
	"github.com/tidemark/tidemark/postgres/queuecheck"
	"github.com/tidemark/tidemark/postgres/reconcile"
	"github.com/tidemark/tidemark/postgres/replay"
	"github.com/tidemark/tidemark/postgres/review"
	"github.com/tidemark/tidemark/postgres/search"
	"github.com/tidemark/tidemark/postgres/secretkeys"
	"github.com/tidemark/tidemark/postgres/stats"
)

// Store is the PostgreSQL implementation of the domain services: the CRUD
// services by noun, each a small type over the shared db, and the engines,
// each in its own package. Embedding them keeps every method on Store.
type Store struct {
	*db

	*tenants
	*providers
	*events
	*records
	*conflicts
	*review.Queue
	*people.Directory
	*auditlog.Log
	*lists.Lists // the event log and the records directory
	*deliverylog.Inspector
	*queuecheck.Checker
	*alertcheck.Evaluations // the alert evaluator's

	*access.Users
	*access.Sessions
	*access.Tokens
	*access.SSO
	*secretkeys.Rekeyer
	*stats.Counters
	*maintain.Maintainer
	*reconcile.Reconciler
	*search.Indexer
	*replay.Jobs
	*backfills.Keeper // backfill jobs (operators', the sweep's and the runner's) and snapshot fields
	*changefeed.Feed
	*destinations.Manager
	*outbound.Outbox // the destination sender's
	*alerts.Rules    // alert rules and alert history
	// Credentials are providers' API credentials, for backfill.
	*apicreds.Credentials
	// Registry holds apps and their installs (global, an admin's).
	*apps.Registry
	// Streams are providers' Change Data Capture streams (IngestCDC is the
	// Writer's).
	*cdc.Streams

	// Writer is the ingest write path: Ingest, Replay's writes, Endpoint,
	// ListenForChanges, EndpointCacheLive and LogRefusals are its.
	*ingest.Writer
}

// db is what the CRUD services share.
type db struct {
	pool *pgxpool.Pool // ingest, writes, maintenance
	read *pgxpool.Pool // the reads of the console and the API (Pools)
	keys *pg.Keyring
	// ids hands out the IDHasher that names records in the audit log and
	// erasure tombstones.
	ids *pg.IDHashes
	log *slog.Logger

	// secrets opens provider secrets with keys and logs those it cannot.
	secrets *pg.Secrets
}

// The CRUD services, one per noun.
type (
	tenants   struct{ *db }
	providers struct{ *db } // providers, their secrets and scopes
	events    struct{ *db }
	records   struct{ *db } // records, the directory, repairs
	conflicts struct{ *db }
)

// Pools are the store's connection pools: Write for ingest, writes and
// maintenance, Read (nil: Write) for the reads of the console and the API,
// typically one opened with ReadPoolConfig.
type Pools = pg.Pools

// New returns a Store on pool, for its reads and writes alike, whose one
// key, encryptionKey (32 bytes), encrypts provider secrets at rest; it logs
// to slog.Default().
func New(pool *pgxpool.Pool, encryptionKey []byte) (*Store, error) {
	return Open(Pools{Write: pool}, Options{Keys: [][]byte{encryptionKey}})
}

// Options configure a Store beyond its pools.
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

// Open returns a Store on pools configured by o.
func Open(pools Pools, o Options) (*Store, error) {
	keys, err := pg.NewKeyring(o.Keys)
	if err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	d := &db{pool: pools.Write, read: pools.ForReads(), keys: keys, ids: pg.NewIDHashes(pools.Write, keys), log: log,
		secrets: pg.NewSecrets(keys, log)}
	users, sessions, tokens := access.New(pools, d.ids)
	return &Store{db: d,
		tenants: &tenants{d}, providers: &providers{d}, events: &events{d}, records: &records{d}, conflicts: &conflicts{d},
		Users: users, Sessions: sessions, Tokens: tokens, SSO: users.SSO(keys, d.secrets),
		Directory:   people.New(pools),
		Inspector:   deliverylog.New(pools),
		Credentials: apicreds.New(pools, d.secrets),
		Registry:    apps.New(pools, keys, d.secrets),
		Streams:     cdc.New(pools),
		Log:         auditlog.New(pools),
		Lists:       lists.New(pools),
		Checker:     queuecheck.New(pools, d.ids),
		Evaluations: alertcheck.New(pools),
		Rekeyer:     secretkeys.New(pools, keys, d.secrets),
		Counters:    stats.New(pools),
		Queue:       review.New(pools),
		Maintainer:  maintain.New(pools),
		Reconciler:  reconcile.New(pools, log),
		Indexer:     search.New(pools),
		Jobs:        replay.New(pools),
		Keeper:      backfills.New(pools),
		Feed:        changefeed.New(pools),
		Manager:     destinations.New(pools, keys),
		Outbox:      outbound.New(pools, keys, log),
		Rules:       alerts.New(pools),
		Writer:      ingest.New(pools, d.secrets, log)}, nil
}

// Pool returns the store's write pool (ingest, writes, maintenance).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

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

// The store implements every domain service; each small type, its own.
var (
	_ domain.TenantService   = (*tenants)(nil)
	_ domain.ProviderService = (*providers)(nil)

	_ domain.CDCService         = (*Store)(nil)
	_ domain.AuditService       = (*Store)(nil)
	_ domain.DeliveryService    = (*Store)(nil)
	_ reconciliation.Service    = (*Store)(nil)
	_ domain.ReplayService      = (*Store)(nil)
	_ stream.DestinationService = (*Store)(nil)
	_ domain.QueueStore         = (*Store)(nil)
	_ domain.TenantService      = (*Store)(nil)
	_ domain.ProviderService    = (*Store)(nil)
	_ domain.ProviderRemover    = (*Store)(nil)
	_ domain.TokenService       = (*Store)(nil)
	_ domain.EventService       = (*Store)(nil)
	_ domain.StatsService       = (*Store)(nil)
	_ domain.RecordService      = (*Store)(nil)
	_ domain.ConflictService    = (*Store)(nil)
	_ domain.PeopleService      = (*Store)(nil)
	_ domain.OperatorService    = (*Store)(nil)
	_ domain.AccessService      = (*Store)(nil)
	_ domain.AppService         = (*Store)(nil)
	_ domain.IngestService      = (*Store)(nil)
	_ stream.Outbox             = (*Store)(nil)
	_ alerting.Evaluator        = (*Store)(nil)
	_ alerting.Service          = (*Store)(nil)
	_ pull.CredentialStore      = (*Store)(nil)
	_ pull.JobStore             = (*Store)(nil)
	_ pull.JobRunnerStore       = (*Store)(nil)
)

// ErrNoKey is what every operation on provider secrets returns on a store
// opened without keys.
var ErrNoKey = pg.ErrNoKey

// PartitionsAhead is how many days after today always have their daily
// partitions.
const PartitionsAhead = maintain.PartitionsAhead

// SearchIndexEvery is how often serve runs IndexSearch.
const SearchIndexEvery = search.Every
