package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestDestinationExpressions: filter and transform are set at creation,
// shown on the destination and in the audit log, changed and removed by
// PATCH; an expression that does not compile, is too long or too costly
// is a 400 naming the field, with CEL's line and column for a syntax or
// type error, and changes nothing.
func TestDestinationExpressions(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")

	for _, c := range []struct{ body, want string }{
		{`{"url": "https://203.0.113.10/h", "filter": "change.type =="}`, "filter: ERROR:1:15: Syntax error:"},
		{`{"url": "https://203.0.113.10/h", "filter": "chnage.type == \"record.applied\""}`,
			"filter: ERROR:1:1: undeclared reference to 'chnage'"},
		{`{"url": "https://203.0.113.10/h", "filter": "1 + \"a\""}`, "filter: ERROR:1:3: found no matching overload for '_+_'"},
		{`{"url": "https://203.0.113.10/h", "filter": "change.object_id"}`, ""},
		{`{"url": "https://203.0.113.10/h", "filter": "\"a\""}`, "filter must return a bool, not string"},
		{`{"url": "https://203.0.113.10/h", "transform": "[change.object_id]"}`, "transform must return a map, not list(dyn)"},
		{`{"url": "https://203.0.113.10/h", "transform": "{\"a\": alert.rule}"}`, "transform: ERROR:1:7: undeclared reference to 'alert'"},
		{`{"url": "https://203.0.113.10/h", "filter": "change.changed.all(a, change.changed.all(b, a != b))"}`,
			"filter: its estimated cost"},
		{`{"url": "https://203.0.113.10/h", "filter": "` + strings.Repeat("true && ", 520) + `true"}`, "filter is 4164 bytes; at most 4096"},
	} {
		if c.want == "" {
			continue // dyn is checked at each evaluation: accepted here
		}
		status, body := destinationCall(e, http.MethodPost, destinationsPath, token, c.body)
		webtest.AssertError(t, status, body, http.StatusBadRequest, c.want)
	}
	if n := e.Strings(`SELECT id::text FROM destinations`); len(n) != 0 {
		t.Fatalf("destinations %v after refusals; want none", n)
	}

	filter, transform := `"lifecyclestage" in change.changed`, `{"email": change.snapshot.email}`
	status, body := destinationCall(e, http.MethodPost, destinationsPath, token,
		fmt.Sprintf(`{"url": "https://203.0.113.10/h", "filter": %q, "transform": %q}`, filter, transform))
	if status != http.StatusCreated || body["filter"] != filter || body["transform"] != transform || body["filtered"] != float64(0) {
		t.Fatalf("create: %d %v", status, body)
	}
	one := fmt.Sprintf("%s/%d", destinationsPath, int64(body["id"].(float64)))
	status, body = e.Get(destinationsPath, token)
	if list := webtest.List(t, status, body, "destinations"); list[0]["filter"] != filter || list[0]["transform"] != transform {
		t.Fatalf("list %v", list)
	}

	status, body = destinationCall(e, http.MethodPatch, one, token, `{"transform": "{\"email\": change.snapshot.email"}`)
	webtest.AssertError(t, status, body, http.StatusBadRequest, "transform: ERROR:1:")
	if _, body = e.Get(one, token); body["transform"] != transform {
		t.Fatalf("after a refused PATCH: %v", body)
	}
	status, body = destinationCall(e, http.MethodPatch, one, token, `{}`)
	webtest.AssertError(t, status, body, http.StatusBadRequest, "give filter or transform")

	status, body = destinationCall(e, http.MethodPatch, one, token, `{"filter": null, "transform": "{\"stage\": change.snapshot.lifecyclestage}"}`)
	if status != http.StatusOK || body["filter"] != nil || body["transform"] != `{"stage": change.snapshot.lifecyclestage}` {
		t.Fatalf("PATCH: %d %v", status, body)
	}
	status, body = destinationCall(e, http.MethodPatch, one, e.TokenWith("acme", domain.NewAPIToken{Name: "bi", Access: domain.TokenRead}), `{"filter": null}`)
	if status != http.StatusForbidden {
		t.Fatalf("PATCH with a read-only token: %d %v", status, body)
	}
	status, body = destinationCall(e, http.MethodPatch, "/api/v1/tenants/acme/destinations/999", token, `{"filter": null}`)
	if status != http.StatusNotFound {
		t.Fatalf("PATCH of no destination: %d %v", status, body)
	}

	audit := e.Strings(`SELECT action || ': ' || summary FROM audit_log WHERE action LIKE 'destination%' ORDER BY id`)
	want := []string{
		"destination_create: https://203.0.113.10/h; types record.*; filter " + filter + "; transform " + transform + "; max in flight 8",
		"destination_update: filter none (was `" + filter + "`); transform `{\"stage\": change.snapshot.lifecyclestage}` (was `" + transform + "`)",
	}
	if strings.Join(audit, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit:\n%s\nwant:\n%s", strings.Join(audit, "\n"), strings.Join(want, "\n"))
	}
}

// TestTestExpression: the expressions tried on the tenant's newest
// changes, or those after a cursor: per change whether it matched, the
// data it would carry, or the error it fails with; nothing is stored.
func TestTestExpression(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	token := e.Token("acme")
	e.Deliver1("m1", webtest.SnapshotBody("c-1", 1, `{"email":"a@x","amount":5000}`))
	e.Deliver1("m2", webtest.SnapshotBody("c-2", 1, `{"email":"b@x","amount":20000}`))
	e.Deliver1("m3", webtest.SnapshotBody("c-3", 1, `{"email":"c@x"}`))
	path := destinationsPath + "/test-expression"

	status, body := destinationCall(e, http.MethodPost, path, token,
		`{"filter": "change.snapshot.amount > 10000", "transform": "{\"email\": change.snapshot.email}"}`)
	if status != http.StatusOK {
		t.Fatalf("%d %v", status, body)
	}
	assertJSON(t, "tried", body, `{"changes": [
		{"id": "`+changeID(e, 1)+`", "cursor": "c1_1", "matched": false},
		{"id": "`+changeID(e, 2)+`", "cursor": "c1_2", "matched": true, "data": {"email": "b@x"}},
		{"id": "`+changeID(e, 3)+`", "cursor": "c1_3", "matched": false, "error": "filter: no such key: amount"}],
		"next_cursor": "c1_3"}`)

	status, body = destinationCall(e, http.MethodPost, path, token, `{"filter": "true", "after": "c1_1", "limit": 1}`)
	if status != http.StatusOK {
		t.Fatalf("%d %v", status, body)
	}
	changes := body["changes"].([]any)
	if len(changes) != 1 || changes[0].(map[string]any)["id"] != changeID(e, 2) || body["next_cursor"] != "c1_2" {
		t.Fatalf("after c1_1, limit 1: %v", body)
	}
	if data := changes[0].(map[string]any)["data"].(map[string]any); data["object_id"] != "c-2" {
		t.Fatalf("without a transform the data is the change: %v", data)
	}

	status, body = destinationCall(e, http.MethodPost, path, token, `{"filter": "change.type ="}`)
	webtest.AssertError(t, status, body, http.StatusBadRequest, "filter: ERROR:1:")
	status, body = destinationCall(e, http.MethodPost, path, token, `{"limit": 101}`)
	webtest.AssertError(t, status, body, http.StatusBadRequest, "limit must be from 1 to 100")
	status, body = destinationCall(e, http.MethodPost, path, token, `{"after": "x"}`)
	webtest.AssertError(t, status, body, http.StatusBadRequest, "not a cursor")
	if n := e.Strings(`SELECT id::text FROM destinations`); len(n) != 0 {
		t.Fatalf("a test stored destinations %v", n)
	}
}

// changeID is the id of acme's change at position.
func changeID(e *webtest.Env, position int) string {
	return fmt.Sprintf("chg_%d_%d", e.Tenant("acme").ID, position)
}
