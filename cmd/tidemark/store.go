package main

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/domain/identity"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/domain/reconciliation"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/postgres/maintain"
	"github.com/tidemark/tidemark/postgres/secretkeys"
)

// cliStore is what the CLI's commands ask of storage, declared where they
// use it: the services of the nouns they manage, and what only an
// operator's command runs. serve and worker wire the whole
// *postgres.Store into their services (node.go).
type cliStore interface {
	domain.TenantService
	domain.ProviderService
	domain.ProviderRemover
	domain.OperatorService
	domain.TokenService
	domain.AdminTokenService
	domain.ConflictService
	domain.ReplayService
	domain.AuditService
	domain.StatsService
	domain.IngestService
	reconciliation.Service
	domain.AppService
	domain.AppJournalService // app subscriptions
	domain.CDCService
	identity.SSOService
	stream.DestinationService
	alerting.Service
	pull.CredentialStore
	pull.JobStore

	// Pool is the database of migrate and citus distribute.
	Pool() *pgxpool.Pool
	IssueMissingSecrets(ctx context.Context, kinds []string, issue func(domain.Provider) (string, error)) ([]domain.Provider, error)
	RekeySecrets(ctx context.Context, batchSize int) (secretkeys.Rekeyed, error)
	SaveReconciliation(ctx context.Context, r reconciliation.Report) error
	CheckRetention(ctx context.Context, retention time.Duration) error
	Cleanup(ctx context.Context, now time.Time, retention time.Duration) (maintain.Report, error)
	// SetHistoryRetention is --history-retention, for this process's cleanups.
	SetHistoryRetention(d time.Duration)
}
