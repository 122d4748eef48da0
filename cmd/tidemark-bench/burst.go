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

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/naive"
	"github.com/tidemark/tidemark/cmd/tidemark-bench/internal/scratch"
	"github.com/tidemark/tidemark/domain"
)

// Strategies of burst.
const (
	burstGuarded  = "guarded"
	burstDistinct = "guarded-distinct" // guarded on distinct identities: the lock-free baseline
	burstNaive    = "naive"
	burstRedis    = "redis-lock"
)

// burstConfig is the command line of burst.
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
	dbs, err := scratch.Open(ctx, cfg.serverURL, cfg.keep, e.stderr)
	if err != nil {
		return err
	}
	defer dbs.Close(ctx)

	db, err := createReceiver(ctx, dbs, fmt.Sprintf("tidemark_burst_%d", time.Now().Unix()))
	if err != nil {
		return err
	}
	// The bench's own pool: truncation, counting, and the naive handlers.
	poolCfg, err := pgxpool.ParseConfig(db.url)
	if err != nil {
		return err
	}
	poolCfg.MaxConns = 16
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, naive.Schema); err != nil {
		return fmt.Errorf("create naive tables: %w", err)
	}

	targets := map[string]string{}
	var serverLog string
	if slices.Contains(cfg.strategies, burstGuarded) || slices.Contains(cfg.strategies, burstDistinct) {
		srv, err := startServer(ctx, withPoolMaxConns(db.url, 16), db.key, e.stderr)
		if err != nil {
			return err
		}
		serverLog = srv.logPath
		defer srv.stop()
		target := srv.webhookURL(benchProvider)
		targets[burstGuarded], targets[burstDistinct] = target, target
	}
	if slices.Contains(cfg.strategies, burstNaive) {
		ts := httptest.NewServer(naive.Handler{Pool: pool})
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
			ts := httptest.NewServer(naive.Handler{Pool: pool, Redis: rdb, Prefix: "tidemark-burst:" + randomHex(6) + ":"})
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
		fire(ctx, cfg, s, targets[s], db.secret, burstLeads(32, true, "warm"), io.Discard)
	}

	var results []burstResult
	for _, c := range cfg.concurrency {
		for _, s := range cfg.strategies {
			if err := resetBurstTables(ctx, pool); err != nil {
				return err
			}
			dbs.Checkpoint(ctx)
			leads := burstLeads(c, s == burstDistinct, "r"+strconv.Itoa(c))
			res := fire(ctx, cfg, s, targets[s], db.secret, leads, e.stderr)
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
	fs := e.flags("burst", "burst [flags]\n\n"+
		"Fire bursts of concurrent lead.signup deliveries that mostly repeat an identity\n"+
		"(C/5 people over C/20 domains) at the receiver, and at check-then-insert baselines\n"+
		"without locks (naive) and with a Redis lock per email (redis-lock); report the\n"+
		"duplicate people, accounts and tasks each left, latencies and 503 answers.")
	var cfg burstConfig
	conc := fs.String("concurrency", "50,100,500,2000", "comma-separated burst sizes (concurrent requests)")
	strategies := fs.String("strategies", strings.Join([]string{burstGuarded, burstDistinct, burstNaive, burstRedis}, ","), "comma-separated strategies to run")
	fs.StringVar(&cfg.serverURL, "server-url", e.serverURL(), "maintenance URL of the PostgreSQL server the scratch database is created on (default DATABASE_URL)")
	fs.StringVar(&cfg.redisAddr, "redis-addr", "127.0.0.1:6379", "Redis of the redis-lock strategy (skipped when it does not answer PING)")
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Second, "client timeout of one request")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the scratch database")
	if err := parse(fs, args); err != nil {
		return cfg, err
	}
	var err error
	if cfg.concurrency, err = parseCounts("burst: --concurrency", *conc); err != nil {
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
			return cfg, fmt.Errorf("burst: unknown strategy %q", s)
		}
	}
	if len(cfg.strategies) == 0 {
		return cfg, errors.New("burst: --strategies is empty")
	}
	return cfg, nil
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
		req, err := signedRequest(ctx, target, secret, fmt.Sprintf("burst-%s-%d-%d", runID, c, i), body)
		if err != nil {
			panic(err) // the secret and the target are ours
		}
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
