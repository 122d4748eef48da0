package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

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
