package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/tidemark/tidemark/domain"
)

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
