package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/provider"
)

// Strategies of bench burst.
const (
	burstGuarded  = "guarded"
	burstDistinct = "guarded-distinct" // guarded on distinct identities: the lock-free baseline
	burstNaive    = "naive"
	burstRedis    = "redis-lock"
)

// burstConfig is the command line of bench burst.
type burstConfig struct {
	concurrency []int
	strategies  []string
	serverURL   string
	redisAddr   string
	timeout     time.Duration
	keep        bool
}

// benchBurst fires bursts of concurrent lead.signup deliveries that mostly
// repeat an identity, at the product's receiver and at check-then-insert
// baselines, and counts the duplicates each left behind.
func (e cliEnv) benchBurst(ctx context.Context, args []string) error {
	cfg, err := e.burstFlags(args)
	if err != nil {
		return err
	}
	admin, err := pgx.Connect(ctx, cfg.serverURL)
	if err != nil {
		return fmt.Errorf("connect to --server-url: %w", err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	dbs := &scratchDatabases{admin: admin, serverURL: cfg.serverURL, keep: cfg.keep, log: e.stderr}
	defer dbs.dropAll(ctx)

	dbURL, err := dbs.create(ctx, fmt.Sprintf("tidemark_burst_%d", time.Now().Unix()))
	if err != nil {
		return err
	}
	key := make([]byte, 32)
	rand.Read(key)
	secret, err := prepareReceiverDatabase(ctx, dbURL, key)
	if err != nil {
		return err
	}
	// The bench's own pool: truncation, counting, and the naive handlers.
	poolCfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return err
	}
	poolCfg.MaxConns = 16
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, naiveSchema); err != nil {
		return fmt.Errorf("create naive tables: %w", err)
	}

	targets := map[string]string{}
	var serverLog string
	if slices.Contains(cfg.strategies, burstGuarded) || slices.Contains(cfg.strategies, burstDistinct) {
		srv, err := startServer(withPoolMaxConns(dbURL, 16), key)
		if err != nil {
			return err
		}
		serverLog = srv.logPath
		defer srv.stop()
		if err := srv.waitReady(ctx, 30*time.Second); err != nil {
			return err
		}
		target := srv.base + "/webhooks/" + benchTenant + "/" + benchProvider
		targets[burstGuarded], targets[burstDistinct] = target, target
	}
	if slices.Contains(cfg.strategies, burstNaive) {
		ts := httptest.NewServer(naiveHandler{pool: pool})
		defer ts.Close()
		targets[burstNaive] = ts.URL
	}
	if slices.Contains(cfg.strategies, burstRedis) {
		rdb := redis.NewClient(&redis.Options{Addr: cfg.redisAddr, PoolSize: 64, PoolTimeout: 30 * time.Second})
		defer rdb.Close()
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := rdb.Ping(pctx).Err()
		cancel()
		if err != nil {
			fmt.Fprintf(e.stderr, "redis at %s does not answer PING (%v): skipping %s\n", cfg.redisAddr, err, burstRedis)
			cfg.strategies = slices.DeleteFunc(cfg.strategies, func(s string) bool { return s == burstRedis })
		} else {
			ts := httptest.NewServer(naiveHandler{pool: pool, redis: rdb, prefix: "tidemark-burst:" + randomHex(6) + ":"})
			defer ts.Close()
			targets[burstRedis] = ts.URL
		}
	}

	// Warm each target once (connections, prepared statements), unmeasured.
	for _, s := range cfg.strategies {
		if s == burstDistinct {
			continue
		}
		if err := resetBurstTables(ctx, pool); err != nil {
			return err
		}
		fire(ctx, cfg, s, targets[s], secret, burstLeads(32, true, "warm"), io.Discard)
	}

	var results []burstResult
	for _, c := range cfg.concurrency {
		for _, s := range cfg.strategies {
			if err := resetBurstTables(ctx, pool); err != nil {
				return err
			}
			checkpoint(ctx, admin)
			leads := burstLeads(c, s == burstDistinct, "r"+strconv.Itoa(c))
			res := fire(ctx, cfg, s, targets[s], secret, leads, e.stderr)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			res.expectPeople, res.expectAccounts = distinctIdentities(leads)
			if err := countDuplicates(ctx, pool, s, &res); err != nil {
				return err
			}
			results = append(results, res)
		}
	}
	printBurstResults(e.stdout, results)
	failed := 0
	for _, r := range results {
		failed += r.errors
	}
	if failed > 0 && serverLog != "" {
		fmt.Fprintf(e.stderr, "server log: %s\n", serverLog)
	}
	return nil
}

func (e cliEnv) burstFlags(args []string) (burstConfig, error) {
	fs := e.flags("bench burst", "bench burst [flags]\n\n"+
		"Fire bursts of concurrent lead.signup deliveries that mostly repeat an identity\n"+
		"(C/5 people over C/20 domains) at the receiver, and at check-then-insert baselines\n"+
		"without locks (naive) and with a Redis lock per email (redis-lock); report the\n"+
		"duplicate people, accounts and tasks each left, latencies and 503 answers.")
	serverURL := e.getenv("DATABASE_URL")
	if serverURL == "" {
		serverURL = defaultServerURL
	}
	var cfg burstConfig
	conc := fs.String("concurrency", "50,100,500,2000", "comma-separated burst sizes (concurrent requests)")
	strategies := fs.String("strategies", strings.Join([]string{burstGuarded, burstDistinct, burstNaive, burstRedis}, ","), "comma-separated strategies to run")
	fs.StringVar(&cfg.serverURL, "server-url", serverURL, "maintenance URL of the PostgreSQL server the scratch database is created on (default DATABASE_URL)")
	fs.StringVar(&cfg.redisAddr, "redis-addr", "127.0.0.1:6379", "Redis of the redis-lock strategy (skipped when it does not answer PING)")
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Second, "client timeout of one request")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the scratch database")
	if _, err := parse(fs, args, 0); err != nil {
		return cfg, err
	}
	var err error
	if cfg.concurrency, err = parseConcurrency(*conc); err != nil {
		return cfg, err
	}
	for _, s := range strings.Split(*strategies, ",") {
		s = strings.TrimSpace(s)
		switch s {
		case burstGuarded, burstDistinct, burstNaive, burstRedis:
			if !slices.Contains(cfg.strategies, s) {
				cfg.strategies = append(cfg.strategies, s)
			}
		case "":
		default:
			return cfg, fmt.Errorf("bench burst: unknown strategy %q", s)
		}
	}
	if len(cfg.strategies) == 0 {
		return cfg, errors.New("bench burst: --strategies is empty")
	}
	return cfg, nil
}

// parseConcurrency reads "50,100,500" into positive burst sizes.
func parseConcurrency(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bench burst: --concurrency %q: %q is not a positive integer", s, f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("bench burst: --concurrency is empty")
	}
	return out, nil
}

// withPoolMaxConns bounds the pgxpool of whoever connects with url.
func withPoolMaxConns(dbURL string, n int) string {
	if strings.HasPrefix(dbURL, "postgres://") || strings.HasPrefix(dbURL, "postgresql://") {
		u, err := url.Parse(dbURL)
		if err != nil {
			return dbURL
		}
		q := u.Query()
		q.Set("pool_max_conns", strconv.Itoa(n))
		u.RawQuery = q.Encode()
		return u.String()
	}
	return strings.TrimSpace(dbURL) + " pool_max_conns=" + strconv.Itoa(n)
}

// burstLeads returns the c signups of one burst. With distinct, every
// signup is its own person and account; otherwise c/5 people over c/20
// domains, each person in one campaign, so most signups repeat an identity.
func burstLeads(c int, distinct bool, tag string) []domain.Lead {
	people, domains := max(1, c/5), max(1, c/20)
	if distinct {
		people, domains = c, c
	}
	leads := make([]domain.Lead, c)
	for i := range c {
		p := i % people
		d := p % domains
		leads[i] = domain.Lead{
			Email:    fmt.Sprintf("p%d-%s@d%d-%s.example", p, tag, d, tag),
			Name:     "Person " + strconv.Itoa(p),
			Company:  "Company " + strconv.Itoa(d),
			Domain:   fmt.Sprintf("d%d-%s.example", d, tag),
			Campaign: "campaign-" + strconv.Itoa(p%3),
			Source:   "bench-burst",
		}
	}
	return leads
}

// distinctIdentities counts the people and accounts leads should create.
func distinctIdentities(leads []domain.Lead) (people, accounts int) {
	emails, domains := map[string]bool{}, map[string]bool{}
	for _, l := range leads {
		emails[l.Email] = true
		if l.Domain != "" {
			domains[l.Domain] = true
		}
	}
	return len(emails), len(domains)
}

// burstResult is one strategy at one burst size.
type burstResult struct {
	strategy    string
	concurrency int
	latencies   []time.Duration // sorted, of answered requests
	total       time.Duration
	ok          int
	unavailable int            // 503 with Retry-After
	errors      int            // everything else
	errorKinds  map[string]int // "503 without Retry-After", "500 ...", transport errors

	expectPeople, expectAccounts int
	people, distinctPeople       int
	accounts, distinctAccounts   int
	tasks, taskPeople            int
}

// fire sends one request per lead, all released at once by a barrier, and
// waits for every answer.
func fire(ctx context.Context, cfg burstConfig, strategy, target, secret string, leads []domain.Lead, progress io.Writer) burstResult {
	c := len(leads)
	res := burstResult{strategy: strategy, concurrency: c, errorKinds: map[string]int{}}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = c
	transport.MaxIdleConns = c
	transport.MaxConnsPerHost = 0
	transport.DialContext = (&net.Dialer{Timeout: cfg.timeout}).DialContext
	client := &http.Client{Transport: transport, Timeout: cfg.timeout}
	defer transport.CloseIdleConnections()

	// Sign everything first so the burst is only the sending.
	runID := randomHex(4)
	reqs := make([]*http.Request, c)
	for i, l := range leads {
		body, err := json.Marshal(map[string]any{"type": domain.LeadSignupType, "timestamp": time.Now().UTC().Format(time.RFC3339), "data": l})
		if err != nil {
			panic(err)
		}
		id := fmt.Sprintf("burst-%s-%d-%d", runID, c, i)
		ts := time.Now().Unix()
		sig, err := provider.SignStandard(secret, id, ts, body)
		if err != nil {
			panic(err) // the secret is ours
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
		if err != nil {
			panic(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("webhook-id", id)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
		req.Header.Set("webhook-signature", sig)
		reqs[i] = req
	}

	var mu sync.Mutex
	var answered atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, req := range reqs {
		wg.Go(func() {
			<-start
			begin := time.Now()
			resp, err := client.Do(req)
			latency := time.Since(begin)
			var kind string
			status := 0
			if err == nil {
				status = resp.StatusCode
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				resp.Body.Close()
				switch {
				case status == http.StatusOK:
				case status == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "":
				case status == http.StatusServiceUnavailable:
					kind = "503 without Retry-After: " + string(bytes.TrimSpace(body))
				default:
					kind = strconv.Itoa(status) + " " + truncate(string(bytes.TrimSpace(body)), 160)
				}
			} else {
				kind = "no answer: " + truncate(err.Error(), 160)
			}
			answered.Add(1)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case kind != "":
				res.errors++
				res.errorKinds[kind]++
			case status == http.StatusOK:
				res.ok++
			default:
				res.unavailable++
			}
			if err == nil {
				res.latencies = append(res.latencies, latency)
			}
		})
	}
	// Let the goroutines reach the barrier before releasing them.
	time.Sleep(min(time.Second, time.Duration(c)*50*time.Microsecond+20*time.Millisecond))
	began := time.Now()
	close(start)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	ticker := time.NewTicker(250 * time.Millisecond)
	defer ticker.Stop()
	line := func() {
		fmt.Fprintf(progress, "\r  %-17s c=%-5d %5d/%d answered  %6.2fs   ", strategy, c, answered.Load(), c, time.Since(began).Seconds())
	}
wait:
	for {
		select {
		case <-done:
			break wait
		case <-ticker.C:
			line()
		}
	}
	res.total = time.Since(began)
	line()
	fmt.Fprintln(progress)
	slices.Sort(res.latencies)
	return res
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// naiveSchema holds the baselines' tables: the product's shape without its
// unique constraints (plain indexes keep the lookups from scanning).
const naiveSchema = `
CREATE TABLE naive_accounts (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, domain text NOT NULL, name text NOT NULL);
CREATE TABLE naive_people (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, email text NOT NULL, name text NOT NULL,
    account_id bigint, source text NOT NULL);
CREATE TABLE naive_tasks (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, person_id bigint NOT NULL, title text NOT NULL);
CREATE TABLE naive_members (campaign text NOT NULL, person_id bigint NOT NULL, source text NOT NULL, joined_at timestamptz NOT NULL);
CREATE INDEX ON naive_accounts (domain);
CREATE INDEX ON naive_people (email);
CREATE INDEX ON naive_tasks (person_id);
CREATE INDEX ON naive_members (person_id, campaign);
`

// resetBurstTables empties the product's lead tables and the naive ones.
func resetBurstTables(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, `TRUNCATE campaign_members, tasks, people, accounts,
		naive_members, naive_tasks, naive_people, naive_accounts`)
	if err != nil {
		return fmt.Errorf("truncate: %w", err)
	}
	return nil
}

// countDuplicates reads what a burst left: rows and distinct identities of
// people (by email), accounts (by domain) and tasks (by the person's email).
func countDuplicates(ctx context.Context, pool *pgxpool.Pool, strategy string, r *burstResult) error {
	people, accounts, tasks := "people", "accounts", "tasks"
	if strategy == burstNaive || strategy == burstRedis {
		people, accounts, tasks = "naive_people", "naive_accounts", "naive_tasks"
	}
	err := pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM `+people+`), (SELECT count(DISTINCT email) FROM `+people+`),
		(SELECT count(*) FROM `+accounts+`), (SELECT count(DISTINCT domain) FROM `+accounts+`),
		(SELECT count(*) FROM `+tasks+`),
		(SELECT count(DISTINCT p.email) FROM `+tasks+` t JOIN `+people+` p ON p.id = t.person_id)`).
		Scan(&r.people, &r.distinctPeople, &r.accounts, &r.distinctAccounts, &r.tasks, &r.taskPeople)
	if err != nil {
		return fmt.Errorf("count duplicates: %w", err)
	}
	return nil
}

// dupPercent is the share of rows beyond one per identity.
func dupPercent(rows, distinct int) float64 {
	if rows == 0 {
		return 0
	}
	return 100 * float64(rows-distinct) / float64(rows)
}

// naiveHandler is the check-then-insert baseline: no locks, no unique
// constraints, one READ COMMITTED transaction per signup. With redis set,
// the sequence runs under a Redis lock per email.
type naiveHandler struct {
	pool   *pgxpool.Pool
	redis  *redis.Client
	prefix string
}

// Lock budget of the redis-lock strategy: how long a request waits for the
// email's lock before it answers 503, and the lock's expiry.
const (
	redisLockTTL    = 5 * time.Second
	redisLockBudget = 10 * time.Second
)

// redisUnlock deletes the lock only if it still holds our token.
var redisUnlock = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`)

func (h naiveHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var env struct {
		Type string      `json:"type"`
		Data domain.Lead `json:"data"`
	}
	if err := json.NewDecoder(r.Body).Decode(&env); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	l, err := domain.NormalizeLead(env.Data)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	if h.redis != nil {
		key := h.prefix + l.Email
		token := randomHex(16)
		deadline := time.Now().Add(redisLockBudget)
		for {
			ok, err := h.redis.SetNX(ctx, key, token, redisLockTTL).Result()
			if err != nil {
				http.Error(w, "redis: "+err.Error(), http.StatusInternalServerError)
				return
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				w.Header().Set("Retry-After", "5")
				http.Error(w, "lock busy", http.StatusServiceUnavailable)
				return
			}
			time.Sleep(5*time.Millisecond + time.Duration(time.Now().UnixNano()%5_000_000))
		}
		defer redisUnlock.Run(context.WithoutCancel(ctx), h.redis, []string{key}, token)
	}
	if err := pgx.BeginTxFunc(ctx, h.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		return naiveSignup(ctx, tx, l)
	}); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Write([]byte(`{"status":"ok"}`))
}

// naiveSignup finds or creates by looking first, the way it is usually written.
func naiveSignup(ctx context.Context, tx pgx.Tx, l domain.Lead) error {
	var personID int64
	err := tx.QueryRow(ctx, `SELECT id FROM naive_people WHERE email = $1 LIMIT 1`, l.Email).Scan(&personID)
	if errors.Is(err, pgx.ErrNoRows) {
		if err := tx.QueryRow(ctx, `INSERT INTO naive_people (email, name, source) VALUES ($1, $2, $3) RETURNING id`,
			l.Email, l.Name, l.Source).Scan(&personID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO naive_tasks (person_id, title) VALUES ($1, $2)`,
			personID, "Follow up with "+l.Email); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	if l.Domain != "" {
		var accountID int64
		err := tx.QueryRow(ctx, `SELECT id FROM naive_accounts WHERE domain = $1 LIMIT 1`, l.Domain).Scan(&accountID)
		if errors.Is(err, pgx.ErrNoRows) {
			err = tx.QueryRow(ctx, `INSERT INTO naive_accounts (domain, name) VALUES ($1, $2) RETURNING id`,
				l.Domain, cmpOr(l.Company, l.Domain)).Scan(&accountID)
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE naive_people SET account_id = $1 WHERE id = $2`, accountID, personID); err != nil {
			return err
		}
	}
	var one int
	err = tx.QueryRow(ctx, `SELECT 1 FROM naive_members WHERE person_id = $1 AND campaign = $2 LIMIT 1`, personID, l.Campaign).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		_, err = tx.Exec(ctx, `INSERT INTO naive_members (campaign, person_id, source, joined_at) VALUES ($1, $2, $3, now())`,
			l.Campaign, personID, l.Source)
	}
	return err
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// printBurstResults writes the table, the lock overhead per burst size and
// the errors.
func printBurstResults(w io.Writer, results []burstResult) {
	const row = "%-18s%-13s%-14s%-16s%-13s%-11s%-11s%-10s%-7s%s\n"
	fmt.Fprintf(w, row, "strategy", "concurrency", "dup people %", "dup accounts %", "dup tasks %", "p50", "p99", "total", "503s", "errors")
	for _, r := range results {
		fmt.Fprintf(w, row, r.strategy, strconv.Itoa(r.concurrency),
			fmt.Sprintf("%.1f", dupPercent(r.people, r.distinctPeople)),
			fmt.Sprintf("%.1f", dupPercent(r.accounts, r.distinctAccounts)),
			fmt.Sprintf("%.1f", dupPercent(r.tasks, r.taskPeople)),
			millis(percentile(r.latencies, 0.50)), millis(percentile(r.latencies, 0.99)),
			millis(r.total), strconv.Itoa(r.unavailable), strconv.Itoa(r.errors))
	}
	fmt.Fprintln(w)
	for _, r := range results {
		fmt.Fprintf(w, "%-18s c=%-5d %d signups (%d answered 200): %d people rows (%d emails, %d expected), %d accounts (%d domains, %d expected), %d tasks\n",
			r.strategy, r.concurrency, r.concurrency, r.ok, r.people, r.distinctPeople, r.expectPeople, r.accounts, r.distinctAccounts, r.expectAccounts, r.tasks)
	}
	// Lock overhead: guarded on repeated identities against distinct ones.
	byKey := map[string]burstResult{}
	for _, r := range results {
		byKey[r.strategy+"/"+strconv.Itoa(r.concurrency)] = r
	}
	printed := false
	for _, r := range results {
		if r.strategy != burstGuarded {
			continue
		}
		d, ok := byKey[burstDistinct+"/"+strconv.Itoa(r.concurrency)]
		if !ok {
			continue
		}
		if !printed {
			fmt.Fprintln(w)
			printed = true
		}
		same, distinct := percentile(r.latencies, 0.99), percentile(d.latencies, 0.99)
		fmt.Fprintf(w, "lock overhead c=%-5d p99 same identity %s - distinct %s = %s\n",
			r.concurrency, millis(same), millis(distinct), millis(same-distinct))
	}
	for _, r := range results {
		if len(r.errorKinds) == 0 {
			continue
		}
		fmt.Fprintf(w, "\nerrors of %s c=%d:\n", r.strategy, r.concurrency)
		kinds := make([]string, 0, len(r.errorKinds))
		for k := range r.errorKinds {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
		for _, k := range kinds {
			fmt.Fprintf(w, "  %5d  %s\n", r.errorKinds[k], k)
		}
	}
}
