package webtest

import (
	"context"
	"strings"
	"time"
)

// dbNow is the database's clock, which decides what is in the future.
func (e *Env) DbNow() time.Time {
	e.T.Helper()
	var now time.Time
	if err := e.Store.Pool().QueryRow(context.Background(), `SELECT now()`).Scan(&now); err != nil {
		e.T.Fatal(err)
	}
	return now
}

// wantResults fails unless a 200 answer's results have these outcomes.
func (e *Env) WantResults(status int, body map[string]any, outcomes ...string) []map[string]any {
	e.T.Helper()
	results := e.HubspotResults(status, body)
	var got []string
	for _, r := range results {
		got = append(got, r["outcome"].(string))
	}
	if strings.Join(got, ",") != strings.Join(outcomes, ",") {
		e.T.Fatalf("outcomes %v (%v), want %v", got, body, outcomes)
	}
	return results
}
