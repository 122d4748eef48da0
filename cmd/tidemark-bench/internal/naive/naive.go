// Package naive is the baselines of the burst benchmark: find-or-create
// by looking first, as it is usually written, with no locks and no unique
// constraints, or under a Redis lock per email.
package naive

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/tidemark/tidemark/domain"
)

// Schema holds the baselines' tables: the product's shape without its
// unique constraints (plain indexes keep the lookups from scanning).
const Schema = `
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

// Handler is the check-then-insert baseline: no locks, no unique
// constraints, one READ COMMITTED transaction per signup. With redis set,
// the sequence runs under a Redis lock per email.
type Handler struct {
	Pool   *pgxpool.Pool
	Redis  *redis.Client
	Prefix string // of the Redis lock keys
}

// Lock budget of the redis-lock strategy: how long a request waits for the
// email's lock before it answers 503, and the lock's expiry.
const (
	redisLockTTL    = 5 * time.Second
	redisLockBudget = 10 * time.Second
)

// redisUnlock deletes the lock only if it still holds our token.
var redisUnlock = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`)

func (h Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	if h.Redis != nil {
		key := h.Prefix + l.Email
		token := randomToken()
		deadline := time.Now().Add(redisLockBudget)
		for {
			ok, err := h.Redis.SetNX(ctx, key, token, redisLockTTL).Result()
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
		defer redisUnlock.Run(context.WithoutCancel(ctx), h.Redis, []string{key}, token)
	}
	if err := pgx.BeginTxFunc(ctx, h.Pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
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
				l.Domain, cmp.Or(l.Company, l.Domain)).Scan(&accountID)
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

// randomToken is a lock's owner token.
func randomToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}
