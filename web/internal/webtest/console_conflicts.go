package webtest

import (
	"context"

	"github.com/PuerkitoBio/goquery"
)

// conflictOf delivers revision rev of contact twice with different
// snapshots and returns the id of the conflict the second delivery opened.
func (e *Env) ConflictOf(contact string, rev int, accepted, conflicting string) int64 {
	e.T.Helper()
	if got := e.Outcome("acme", "crm", e.Secret, contact+"-a", SnapshotBody(contact, rev, accepted)); got != "applied" {
		e.T.Fatalf("first snapshot: %s", got)
	}
	if got := e.Outcome("acme", "crm", e.Secret, contact+"-b", SnapshotBody(contact, rev, conflicting)); got != "revision_conflict" {
		e.T.Fatalf("second snapshot: %s", got)
	}
	var id int64
	err := e.Store.Pool().QueryRow(context.Background(),
		`SELECT conflict_id FROM events WHERE event_id = $1 AND outcome = 'revision_conflict'`, contact+"-b").Scan(&id)
	if err != nil {
		e.T.Fatal(err)
	}
	return id
}

func ShownFlash(doc *goquery.Document) string { return Text(doc, ".flash") }

// redirectTarget requests path and returns the status and redirect target.
func (b *Browser) RedirectTarget(path string) (int, string) {
	b.E.T.Helper()
	resp, err := b.Client.Get(b.E.Srv.URL + path)
	if err != nil {
		b.E.T.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}
