package webtest

import (
	"context"
	"io"
	"net/http"
)

// count runs a counting query.
func (e *Env) Count(sql string) int {
	e.T.Helper()
	var n int
	if err := e.Store.Pool().QueryRow(context.Background(), sql).Scan(&n); err != nil {
		e.T.Fatalf("%s: %v", sql, err)
	}
	return n
}

// metrics fetches /metrics.
func (e *Env) Metrics() string {
	e.T.Helper()
	resp, err := http.Get(e.Srv.URL + "/metrics")
	if err != nil {
		e.T.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
