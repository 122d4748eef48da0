package web

import "github.com/tidemark/tidemark/domain"

// ServicesOf returns every service from one storage. Only
// postgres/console_bench_test.go still calls it (postgres/ is being
// changed on another branch); once that test builds Services field by
// field, as cmd/tidemark's servicesOf does, delete this file.
func ServicesOf(st interface {
	domain.IngestService
	domain.AccessService
	domain.OperatorService
	domain.ProviderService
	domain.TokenService
	domain.EventService
	domain.StatsService
	domain.RecordService
	domain.ConflictService
	domain.PeopleService
	domain.AuditService
	domain.ReconciliationService
	domain.DeliveryService
	domain.ReplayService
}) Services {
	return Services{Ingest: st, Access: st, Operators: st, Providers: st, Tokens: st, Events: st, Stats: st,
		Records: st, Conflicts: st, People: st, Audit: st, Reconciliation: st, Deliveries: st, Replays: st}
}
