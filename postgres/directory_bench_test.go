package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres/search"
)

// BenchmarkRecordSearch measures the records directory and the searches
// of the records directory on a tenant with 200,000 records and a million events over
// the last 30 days, beside 10 other tenants with 20,000 records and 50,000
// events each in the same tables. Each query reports its p50 and p95
// latency; the target is a p95 under 100 ms.
//
//	go test ./postgres -run '^$' -bench RecordSearch -benchtime 50x -timeout 60m
//
// Seeding, indexing and vacuuming take about three minutes on two cores
// and happen once per run.
func BenchmarkRecordSearch(b *testing.B) {
	ctx := asTest(context.Background())
	s := storeOn(b, testdb.NewURL(b), "bench", 8)
	now := time.Now()
	tenants := []directoryTenant{{"acme", 200_000, 1_000_000}}
	for i := range 10 {
		tenants = append(tenants, directoryTenant{fmt.Sprintf("other-%d", i), 20_000, 50_000})
	}
	ids, err := seedDirectories(b, ctx, s, now, tenants)
	if err != nil {
		b.Fatal(err)
	}
	tenantID := ids[0]

	directory := func(q domain.RecordQuery) func() (int, error) {
		return func() (int, error) {
			list, _, err := s.RecordDirectory(ctx, tenantID, q, domain.Page{Limit: 50})
			return len(list), err
		}
	}
	events := func(q domain.EventLogQuery) func() (int, error) {
		return func() (int, error) {
			list, _, err := s.EventLog(ctx, tenantID, q, domain.Page{Limit: 50})
			return len(list), err
		}
	}
	few := `"` + directoryFirstNames[0] + " " + directorySyllables[0] + directorySuffixes[0] + `"`
	queries := []struct {
		name string
		run  func() (int, error)
	}{
		{"directory", directory(domain.RecordQuery{})},
		{"directory-filtered", directory(domain.RecordQuery{Provider: "erp", ObjectType: "deal", OpenConflicts: true,
			From: now.Add(-20 * 24 * time.Hour), Before: now.Add(-2 * 24 * time.Hour)})},
		{"records-q-many", directory(domain.RecordQuery{Search: "engineer"})},
		{"records-q-few", directory(domain.RecordQuery{Search: few})},
		{"records-q-id-prefix", directory(domain.RecordQuery{Search: "d-1234"})},
		{"events-q-many", events(domain.EventLogQuery{Search: "engineer"})},
		{"events-q-few", events(domain.EventLogQuery{Search: few})},
		{"events-q-many-filtered", events(domain.EventLogQuery{Search: "engineer", Provider: "shop", Outcome: domain.Stale})},
		{"events-q-few-day", events(domain.EventLogQuery{Search: few, From: now.Add(-3 * 24 * time.Hour)})},
	}
	for _, q := range queries {
		b.Run(q.name, func(b *testing.B) {
			n, err := q.run()
			if err != nil || n == 0 {
				b.Fatalf("%s: %d rows, %v", q.name, n, err)
			}
			took := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				if _, err := q.run(); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(t0))
			}
			b.StopTimer()
			reportLatency(b, took, n)
		})
	}
}

// reportLatency reports the p50 and p95 of took in milliseconds, and how
// many rows the query returned.
func reportLatency(b *testing.B, took []time.Duration, rows int) {
	slices.Sort(took)
	for _, p := range []struct {
		unit string
		at   float64
	}{{"p50-ms", 0.50}, {"p95-ms", 0.95}} {
		b.ReportMetric(float64(percentile(took, p.at).Microseconds())/1000, p.unit)
	}
	b.ReportMetric(float64(rows), "rows")
}

// directorySpan is how far back the seeded events go.
const directorySpan = 30 * 24 * time.Hour

// The words of seeded snapshots. A person's surname is a syllable and a
// suffix (400 surnames; with 40 first names, a full name is shared by a
// handful of records); job titles, statuses and companies repeat widely.
var (
	directoryFirstNames = strings.Fields(`Ada Grace Alan Edsger Barbara Donald Frances Niklaus Radia Ken Margaret Dennis
		Leslie John Tim Sophie Linus Guido Bjarne Anita Hedy Katherine Mary Claude Joan Carl Ivan Lynn Shafi Whitfield
		Vint Bob Judea Silvio Adele Jean Yukihiro Rob Brian Hal`)
	directorySyllables = strings.Fields(`Mar Kel Tor Ash Bren Cal Dun Elm Fair Gal Hart Ivers Jor Lind Mont Nor Oak Pem Quar Rad`)
	directorySuffixes  = strings.Fields(`ton by well son ford ley man wood field ridge more dale berg stein ini ova ez ski sen ard`)
	directoryTitles    = []string{"Director of Sales", "Software Engineer", "Account Manager", "Data Analyst", "Founder",
		"Product Designer", "Sales Engineer", "Marketing Lead", "Chief Financial Officer", "Support Specialist",
		"Operations Manager", "Recruiter"}
	directoryAdjectives = strings.Fields(`Blue Northern Bright Silver Quiet Rapid Golden Iron Crimson Green Lucky Polar
		Royal Swift Urban Vivid Wild Amber Cobalt Coral Dusty Hidden Lunar Misty Solar`)
	directoryNouns = strings.Fields(`Harbor Peak Forge Works Labs Systems Logistics Foods Capital Media Robotics Health
		Energy Studio Partners Dynamics Textiles Motors Networks Analytics Ventures Freight Pharma Metals Grove`)
	directoryCities     = strings.Fields(`Lisbon Berlin Austin Osaka Toronto Nairobi Lyon Denver Porto Dublin Seoul Oslo Quito Perth Cork`)
	directoryStatuses   = strings.Fields(`new open qualified customer churned`)
	directoryStages     = strings.Fields(`discovery proposal negotiation won lost`)
	directoryIndustries = strings.Fields(`software retail logistics banking healthcare manufacturing media energy`)
)

// seedDirectoryEventsSQL writes @events events of @records records (every
// record's first event creates it) spread over @span before @now, for the
// providers @providers (6:3:1) and three object types, in the order they
// would have arrived. h(n) below is (hashint8(x * 16 + n) & 2147483647),
// a repeatable pseudo-random number of the record (r) or event (g).
const seedDirectoryEventsSQL = `
WITH k AS MATERIALIZED (
    SELECT r, (@providers::bigint[])[CASE WHEN r % 10 < 6 THEN 1 WHEN r % 10 < 9 THEN 2 ELSE 3 END] AS provider_id,
           t.object_type, t.prefix || r AS object_id,
           (@first::text[])[1 + (hashint8(r * 16 + 3) & 2147483647) % cardinality(@first)] || ' ' ||
           (@syllables::text[])[1 + (hashint8(r * 16 + 4) & 2147483647) % cardinality(@syllables)] ||
           (@suffixes::text[])[1 + (hashint8(r * 16 + 5) & 2147483647) % cardinality(@suffixes)] AS name,
           (@adjectives::text[])[1 + (hashint8(r * 16 + 6) & 2147483647) % cardinality(@adjectives)] || ' ' ||
           (@nouns::text[])[1 + (hashint8(r * 16 + 7) & 2147483647) % cardinality(@nouns)] AS company,
           (@cities::text[])[1 + (hashint8(r * 16 + 8) & 2147483647) % cardinality(@cities)] AS city,
           (@industries::text[])[1 + (hashint8(r * 16 + 9) & 2147483647) % cardinality(@industries)] AS industry
    FROM generate_series(1, @records::int) r,
         LATERAL (VALUES (CASE WHEN r / 10 % 20 < 12 THEN 'contact' WHEN r / 10 % 20 < 17 THEN 'deal' ELSE 'company' END)) t0(object_type),
         LATERAL (VALUES (t0.object_type, CASE t0.object_type WHEN 'contact' THEN 'c-' WHEN 'deal' THEN 'd-' ELSE 'co-' END)) t(object_type, prefix)
), e AS (
    SELECT g, r, at, row_number() OVER (PARTITION BY r ORDER BY at) = 1 AS first,
           (hashint8(g * 16 + 1) & 2147483647) % 1000 AS roll, (extract(epoch FROM at) * 1000)::bigint AS ms
    FROM (SELECT g, CASE WHEN g <= @records THEN g ELSE 1 + (hashint8(g * 16 + 2) & 2147483647) % @records END AS r,
                 @now::timestamptz - @span::interval * ((hashint8(g * 16 + 3) & 2147483647) / 2147483648.0) AS at
          FROM generate_series(1, @events::int) g) e
)
INSERT INTO events (tenant_id, received_at, delivery_id, seq, provider_id, object_type, action, event_id,
                    object_id, revision, outcome, reason, snapshot, payload)
SELECT @tenant_id, e.at, gen_random_uuid(), 0, k.provider_id, k.object_type, 'snapshot', 'evt-' || e.g,
       k.object_id, o.revision, o.outcome,
       CASE o.outcome WHEN 'stale' THEN 'revision ' || o.revision || ' is older than the stored revision'
                      WHEN 'rejected' THEN 'revision must be a non-negative integer' END,
       w.snapshot,
       convert_to(format('{"type":"%s.snapshot","data":{"object_id":"%s","revision":%s,"snapshot":%s}}',
                         k.object_type, k.object_id, coalesce(o.revision::text, 'null'), w.snapshot), 'UTF8')
FROM e JOIN k USING (r)
CROSS JOIN LATERAL (
    SELECT CASE WHEN e.first OR e.roll < 650 OR e.roll >= 960 THEN 'applied' WHEN e.roll < 750 THEN 'duplicate'
                WHEN e.roll < 810 THEN 'stale' WHEN e.roll < 860 THEN 'redundant' WHEN e.roll < 900 THEN 'unversioned'
                WHEN e.roll < 925 THEN 'rejected' WHEN e.roll < 940 THEN 'event_conflict' ELSE 'revision_conflict' END AS outcome,
           CASE WHEN NOT e.first AND e.roll BETWEEN 860 AND 924 THEN NULL
                WHEN NOT e.first AND e.roll BETWEEN 750 AND 809 THEN e.ms - 86400000 ELSE e.ms END AS revision
) o
CROSS JOIN LATERAL (
    SELECT CASE k.object_type
        WHEN 'contact' THEN jsonb_build_object('name', k.name, 'email',
            lower(replace(k.name, ' ', '.') || '@' || replace(k.company, ' ', '')) || '.example',
            'job_title', (@titles::text[])[1 + (hashint8(e.g * 16 + 4) & 2147483647) % cardinality(@titles)],
            'company', k.company, 'city', k.city,
            'lead_status', (@statuses::text[])[1 + (hashint8(e.g * 16 + 5) & 2147483647) % cardinality(@statuses)])
        WHEN 'deal' THEN jsonb_build_object('deal_name', k.company || ' renewal', 'owner', k.name, 'company', k.company,
            'stage', (@stages::text[])[1 + (hashint8(e.g * 16 + 6) & 2147483647) % cardinality(@stages)],
            'amount', (hashint8(e.g * 16 + 7) & 2147483647) % 100000)
        ELSE jsonb_build_object('name', k.company, 'domain', lower(replace(k.company, ' ', '')) || '.example',
            'city', k.city, 'industry', k.industry, 'employees', (hashint8(e.g * 16 + 7) & 2147483647) % 5000)
        END AS snapshot
) w
ORDER BY e.at`

// seedDirectoryRecordsSQL derives what ingest would have kept from the
// seeded events: an accepted revision per applied event (in arrival
// order, so ids follow time), each record at its last one (one in a
// hundred deleted), and a conflict per revision conflict, a fifth of them
// still open.
var seedDirectoryRecordsSQL = []string{`
INSERT INTO accepted_revisions (tenant_id, provider_id, object_type, object_id, revision, snapshot, event_id, delivery_id, applied_at)
SELECT tenant_id, provider_id, object_type, object_id, revision, snapshot, event_id, delivery_id, received_at
FROM events WHERE tenant_id = @tenant_id AND outcome = 'applied' ORDER BY received_at`, `
INSERT INTO records (tenant_id, provider_id, object_type, object_id, revision, snapshot, application_count,
                     last_applied_event, last_applied_delivery, last_applied_seq, created_at, updated_at, deleted_revision)
SELECT DISTINCT ON (provider_id, object_type, object_id) tenant_id, provider_id, object_type, object_id, revision, snapshot,
       count(*) OVER w, event_id, delivery_id, 0, min(applied_at) OVER w, applied_at,
       CASE WHEN (hashint8(id) & 2147483647) % 100 = 0 THEN revision END
FROM accepted_revisions WHERE tenant_id = @tenant_id
WINDOW w AS (PARTITION BY provider_id, object_type, object_id)
ORDER BY provider_id, object_type, object_id, revision DESC`, `
INSERT INTO conflicts (tenant_id, provider_id, object_type, object_id, revision, accepted_event_id, accepted_snapshot,
                       conflicting_event_id, conflicting_snapshot, status, detected_at)
SELECT tenant_id, provider_id, object_type, object_id, revision, event_id || '-rival', snapshot, event_id, snapshot,
       CASE WHEN (hashint8(revision) & 2147483647) % 5 = 0 THEN 'open' ELSE 'kept' END, received_at
FROM events WHERE tenant_id = @tenant_id AND outcome = 'revision_conflict'`,
}

// directoryTenant is a tenant to seed and how much.
type directoryTenant struct {
	slug            string
	records, events int
}

// seedDirectories seeds tenants (their ids are returned in order) as
// seedDirectory does, two at a time; indexes every event into event_search
// (its GIN index built after, as a REINDEX would) and every record into
// record_search with IndexSearch's statement, leaving search_progress past
// them; and vacuums and analyses the tables as autovacuum would have.
func seedDirectories(b testing.TB, ctx context.Context, s *Store, now time.Time, tenants []directoryTenant) ([]int64, error) {
	start := time.Now()
	if _, err := s.EnsurePartitions(ctx, now.Add(-directorySpan), 31); err != nil {
		return nil, err
	}
	ids := make([]int64, len(tenants))
	errs := make([]error, len(tenants))
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() { // worker 0 seeds the first tenant, the largest; worker 1 the others
			defer wg.Done()
			for i, t := range tenants {
				if (i == 0) == (w == 0) {
					ids[i], errs[i] = seedDirectory(ctx, s, t.slug, t.records, t.events, now)
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	b.Logf("seeded %d tenants in %s", len(tenants), time.Since(start).Round(time.Second))
	start = time.Now()
	var indexed int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var last int64
		if _, err := tx.Exec(ctx, `SET LOCAL maintenance_work_mem = '512MB'`); err != nil {
			return err
		}
		// The events' words at once, the index built after them.
		var lastEvent int64
		for _, sql := range []string{`DROP INDEX event_search_words`, `INSERT INTO event_search
		        (tenant_id, received_at, delivery_id, seq, provider_id, object_type, action, object_id, outcome, vector)
		    SELECT tenant_id, received_at, delivery_id, seq, provider_id, object_type, action, object_id, outcome, ` + search.EventVector + `
		    FROM events e WHERE snapshot IS NOT NULL`, eventSearchWordsSQL} {
			if _, err := tx.Exec(ctx, sql); err != nil {
				return err
			}
		}
		if err := tx.QueryRow(ctx, search.EventSequenceSQL).Scan(&lastEvent); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT max(id) FROM accepted_revisions`).Scan(&last); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, search.RecordIndexSQL, pgx.NamedArgs{"lo": 0, "hi": last})
		if err != nil {
			return err
		}
		indexed = tag.RowsAffected()
		_, err = tx.Exec(ctx, `UPDATE search_progress SET gaps = '{}',
		    scanned_id = CASE feed WHEN 'records' THEN $1::bigint ELSE $2::bigint END, pending_id = NULL, pending_xids = NULL`, last, lastEvent)
		return err
	})
	if err != nil {
		return nil, err
	}
	if n, err := s.IndexSearch(ctx); err != nil || n != 0 {
		return nil, fmt.Errorf("IndexSearch after seeding indexed %d records: %v", n, err)
	}
	b.Logf("indexed the events' words and %d records in %s", indexed, time.Since(start).Round(time.Second))
	start = time.Now()
	if _, err := s.pool.Exec(ctx, `VACUUM ANALYZE events, records, accepted_revisions, conflicts, record_search, event_search`); err != nil {
		return nil, err
	}
	var sizes string
	err = s.pool.QueryRow(ctx, `SELECT string_agg(c || ' ' || pg_size_pretty(coalesce(
		    (SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree(c)), pg_total_relation_size(c))), ', ')
		FROM unnest('{events,event_search,records,record_search,record_search_words,accepted_revisions}'::regclass[]) c`).Scan(&sizes)
	b.Logf("vacuumed in %s; sizes: %s", time.Since(start).Round(time.Second), sizes)
	return ids, err
}

// seedDirectory creates tenant with the providers crm, erp and shop, each
// with the scopes contact, deal and company, and seeds it with set-based
// SQL: events (within the partitions that must exist), accepted
// revisions, records and conflicts as ingest would have left them. It
// returns the tenant's id.
func seedDirectory(ctx context.Context, s *Store, tenant string, records, events int, now time.Time) (int64, error) {
	t, err := s.CreateTenant(ctx, tenant, "")
	if err != nil {
		return 0, err
	}
	var providers []int64
	for _, name := range []string{"crm", "erp", "shop"} {
		p, err := s.ConnectProvider(ctx, t.ID, name, "standard", "whsec_dGVzdA==", nil)
		if err != nil {
			return 0, err
		}
		providers = append(providers, p.ID)
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO scopes (tenant_id, provider_id, object_type, action)
		SELECT @tenant_id, p, t, 'snapshot' FROM unnest(@providers::bigint[]) p, unnest('{contact,deal,company}'::text[]) t`,
		pgx.NamedArgs{"tenant_id": t.ID, "providers": providers})
	if err != nil {
		return 0, err
	}
	args := pgx.NamedArgs{"tenant_id": t.ID, "providers": providers, "records": records, "events": events,
		"now": now, "span": directorySpan, "first": directoryFirstNames, "syllables": directorySyllables,
		"suffixes": directorySuffixes, "titles": directoryTitles, "adjectives": directoryAdjectives,
		"nouns": directoryNouns, "cities": directoryCities, "statuses": directoryStatuses,
		"stages": directoryStages, "industries": directoryIndustries}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL work_mem = '256MB'; SET LOCAL jit = off`); err != nil {
			return err
		}
		for _, sql := range append([]string{seedDirectoryEventsSQL}, seedDirectoryRecordsSQL...) {
			if _, err := tx.Exec(ctx, sql, args); err != nil {
				return fmt.Errorf("seed %s: %w: %.80s", tenant, err, strings.TrimSpace(sql))
			}
		}
		return nil
	})
	return t.ID, err
}

// ingestCostBlocks is how many blocks of rounds BenchmarkIngestSearchIndexCost
// runs, each round of every layout twice, in mirrored order.
const ingestCostBlocks = 3

// eventSearchWordsSQL is migration 00026's index of event_search.
const eventSearchWordsSQL = `CREATE INDEX event_search_words ON event_search USING gin (tenant_id, provider_id, outcome, vector)`

// ingestLayouts are the schemas BenchmarkIngestSearchIndexCost compares:
// what each adds to the log without any search, and takes away again.
var ingestLayouts = []struct{ name, add, drop string }{
	{"none", "", ""},
	// 00026: a sequence value and a BRIN entry per event; IndexSearch does the rest.
	{"feed", `ALTER TABLE events ALTER COLUMN search_id SET DEFAULT nextval('events_search_seq');
	          CREATE INDEX events_search_id ON events USING brin (search_id)`,
		`ALTER TABLE events ALTER COLUMN search_id DROP DEFAULT; DROP INDEX events_search_id`},
	// The first design: the words indexed on the log itself.
	{"gin", `CREATE INDEX events_words ON events USING gin (tenant_id, to_tsvector('simple'::regconfig, snapshot))`,
		`DROP INDEX events_words`},
}

// BenchmarkIngestSearchIndexCost measures what the event search costs
// ingest: 8 senders deliver contact snapshots through Ingest, one event
// and 100 events per delivery, in rounds of b.N events on each of
// ingestLayouts (without search; migration 00026's feed for IndexSearch;
// a GIN index on the log), in blocks that run the layouts forth and back
// so that drift between rounds cancels out, on a database that already
// holds 100,000 events. It reports the mean throughput of each and the
// ratios to the one without search.
//
//	go test ./postgres -run '^$' -bench IngestSearchIndexCost -benchtime 10000x -timeout 60m
func BenchmarkIngestSearchIndexCost(b *testing.B) {
	ctx := asTest(context.Background())
	s := storeOn(b, testdb.NewURL(b), "bench", 16)
	ids, err := seedDirectories(b, ctx, s, time.Now(), []directoryTenant{{"acme", 20_000, 100_000}})
	if err != nil {
		b.Fatal(err)
	}
	p, err := s.Endpoint(ctx, "acme", "crm")
	if err != nil || p.TenantID != ids[0] {
		b.Fatalf("endpoint: %+v, %v", p, err)
	}
	var seq atomic.Int64 // events ingested so far; revisions above the seeded ones
	snapshot := func(i int64) string {
		pick := func(words []string, salt int64) string { return words[(i*7+salt*13)%int64(len(words))] }
		name := pick(directoryFirstNames, 1) + " " + pick(directorySyllables, 2) + pick(directorySuffixes, 3)
		company := pick(directoryAdjectives, 4) + " " + pick(directoryNouns, 5)
		return fmt.Sprintf(`{"name":%q,"email":%q,"job_title":%q,"company":%q,"city":%q,"lead_status":%q}`, name,
			strings.ToLower(strings.ReplaceAll(name, " ", "."))+"@example.com", pick(directoryTitles, 6), company,
			pick(directoryCities, 7), pick(directoryStatuses, 8))
	}
	// round ingests n events from 8 senders and returns events/s.
	round := func(n, perDelivery int) (float64, error) {
		if _, err := s.pool.Exec(ctx, `CHECKPOINT`); err != nil {
			return 0, err
		}
		var (
			wg    sync.WaitGroup
			left  atomic.Int64
			first error
			once  sync.Once
		)
		left.Store(int64(n))
		start := time.Now()
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					k := min(int64(perDelivery), left.Add(-int64(perDelivery))+int64(perDelivery))
					if k <= 0 {
						return
					}
					batch := make([]domain.Event, k)
					for j := range batch {
						i := seq.Add(1)
						batch[j] = event(fmt.Sprintf("bench-%d", i), fmt.Sprintf("c-%d", i%20_000), 10_000_000_000_000+i, snapshot(i))
						batch[j].Seq = j
					}
					if _, err := s.Ingest(ctx, delivery(p), p, batch); err != nil {
						once.Do(func() { first = err })
						return
					}
				}
			}()
		}
		wg.Wait()
		return float64(n) / time.Since(start).Seconds(), first
	}
	// A first round creates the contacts the measured rounds update.
	if _, err := round(20_000, 100); err != nil {
		b.Fatal(err)
	}
	// Start from the layout without search.
	if _, err := s.pool.Exec(ctx, ingestLayouts[1].drop); err != nil {
		b.Fatal(err)
	}
	for _, perDelivery := range []int{1, 100} {
		b.Run(fmt.Sprintf("events-per-delivery=%d", perDelivery), func(b *testing.B) {
			sum := make([]float64, len(ingestLayouts)) // events/s of each layout, summed
			for range ingestCostBlocks {
				for _, l := range []int{0, 1, 2, 2, 1, 0} {
					layout := ingestLayouts[l]
					if layout.add != "" {
						if _, err := s.pool.Exec(ctx, layout.add); err != nil {
							b.Fatal(err)
						}
					}
					r, err := round(b.N, perDelivery)
					if err != nil {
						b.Fatal(err)
					}
					sum[l] += r
					if layout.drop != "" {
						if _, err := s.pool.Exec(ctx, layout.drop); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			b.ReportMetric(0, "ns/op") // the rounds' time per event of one round means nothing
			for l, layout := range ingestLayouts {
				b.ReportMetric(sum[l]/2/ingestCostBlocks, layout.name+"-events/s")
				if l > 0 {
					b.ReportMetric(sum[l]/sum[0], layout.name+"/none")
				}
			}
		})
	}
	// Leave the schema as migrated.
	if _, err := s.pool.Exec(ctx, ingestLayouts[1].add); err != nil {
		b.Fatal(err)
	}
}
