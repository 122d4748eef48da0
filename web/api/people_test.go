package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

func TestPeopleSignupsOverHTTP(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	body := []byte(`{"type":"lead.signup","data":{"email":"Ada@Example.com","name":"Ada","company":"Example","campaign":"launch","source":"webinar"}}`)
	if status, answer := e.Deliver1("s1", body); webtest.Outcome(t, status, answer) != "applied" {
		t.Fatalf("first signup: %v, want applied", answer)
	}
	if status, answer := e.Deliver1("s2", body); webtest.Outcome(t, status, answer) != "redundant" {
		t.Fatalf("second signup of the same person and campaign: %v, want redundant", answer)
	}
	status, answer := e.Deliver1("s3", webtest.SignupBody("not-an-email", "X", "launch"))
	if got := webtest.Outcome(t, status, answer); got != "rejected" {
		t.Fatalf("invalid email: %q, want rejected", got)
	}
	if reason, _ := answer["results"].([]any)[0].(map[string]any)["reason"].(string); !strings.Contains(reason, "email") {
		t.Fatalf("invalid email reason %q", reason)
	}

	tok := e.Token("acme")
	status, got := e.Get("/api/v1/tenants/acme/people?email="+url.QueryEscape(" ADA@example.COM "), tok)
	if status != http.StatusOK {
		t.Fatalf("people?email= answered %d %v", status, got)
	}
	people := got["people"].([]any)
	if len(people) != 1 {
		t.Fatalf("people %v, want one", got)
	}
	taskID := people[0].(map[string]any)["tasks"].([]any)[0].(map[string]any)["id"]
	want := map[string]any{"people": []any{map[string]any{
		"email": "ada@example.com", "name": "Ada",
		"account":   map[string]any{"domain": "example.com", "name": "Example"},
		"tasks":     []any{map[string]any{"id": taskID, "status": "open"}},
		"campaigns": []any{"launch"},
	}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("people?email=\n got %v\nwant %v", got, want)
	}
	if _, ok := taskID.(float64); !ok {
		t.Fatalf("task id %v is not a number", taskID)
	}
	status, got = e.Get("/api/v1/tenants/acme/people?email=nobody@example.com", tok)
	if status != http.StatusOK || len(got["people"].([]any)) != 0 {
		t.Fatalf("unknown email: %d %v, want an empty list", status, got)
	}
}

func TestPeopleAPIListPaginationAndIsolation(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	for i := range 5 {
		email := fmt.Sprintf("p%d@gmail.com", i)
		if got := e.Outcome("acme", "crm", e.Secret, fmt.Sprint("s", i), webtest.SignupBody(email, "P", "launch")); got != "applied" {
			t.Fatalf("signup %d: %s", i, got)
		}
	}
	gsecret := e.Provider("globex", "crm")
	if got := e.Outcome("globex", "crm", gsecret, "g1", webtest.SignupBody("secret@globex.com", "G", "x")); got != "applied" {
		t.Fatalf("globex signup: %s", got)
	}
	tok := e.Token("acme")
	var emails []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
		path := "/api/v1/tenants/acme/people?limit=2"
		if cursor != "" {
			path += "&cursor=" + url.QueryEscape(cursor)
		}
		status, got := e.Get(path, tok)
		if status != http.StatusOK {
			t.Fatalf("%s: %d %v", path, status, got)
		}
		for _, p := range got["people"].([]any) {
			person := p.(map[string]any)
			if person["account"] != nil {
				t.Fatalf("free-mail person has account %v", person["account"])
			}
			emails = append(emails, person["email"].(string))
		}
		next, _ := got["next_cursor"].(string)
		if next == "" {
			if _, ok := got["next_cursor"]; !ok {
				t.Fatalf("list answer has no next_cursor: %v", got)
			}
			break
		}
		cursor = next
	}
	want := []string{"p4@gmail.com", "p3@gmail.com", "p2@gmail.com", "p1@gmail.com", "p0@gmail.com"}
	if !reflect.DeepEqual(emails, want) {
		t.Fatalf("people %v, want newest first %v", emails, want)
	}
	if status, got := e.Get("/api/v1/tenants/acme/people?cursor=garbage", tok); status != http.StatusBadRequest {
		t.Fatalf("bad cursor: %d %v", status, got)
	}
	if status, got := e.Get("/api/v1/tenants/acme/people?email=secret@globex.com", tok); status != http.StatusOK || len(got["people"].([]any)) != 0 {
		t.Fatalf("acme token sees globex person: %d %v", status, got)
	}
	gtok := e.Token("globex")
	if status, _ := e.Get("/api/v1/tenants/acme/people", gtok); status != http.StatusNotFound {
		t.Fatalf("globex token on acme people: %d, want 404", status)
	}
	if status, got := e.Get("/api/v1/tenants/globex/people", gtok); status != http.StatusOK || len(got["people"].([]any)) != 1 {
		t.Fatalf("globex people: %d %v", status, got)
	}
}
