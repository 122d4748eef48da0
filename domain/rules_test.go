package domain_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// wantCode checks err against a wanted code: "" means no error.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	switch {
	case code == "" && err != nil:
		t.Fatalf("unexpected error: %v", err)
	case code != "" && err == nil:
		t.Fatalf("no error, want %s", code)
	case code != "" && domain.ErrorCode(err) != code:
		t.Fatalf("error %v has code %s, want %s", err, domain.ErrorCode(err), code)
	}
}

func TestValidateSlug(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, slug, code string
	}{
		{"one letter", "a", ""},
		{"one digit", "7", ""},
		{"word", "acme", ""},
		{"dash inside", "acme-eu-2", ""},
		{"digit first", "0x", ""},
		{"63 characters", strings.Repeat("a", 63), ""},
		{"empty", "", domain.EINVALID},
		{"64 characters", strings.Repeat("a", 64), domain.EINVALID},
		{"dash first", "-acme", domain.EINVALID},
		{"upper case", "Acme", domain.EINVALID},
		{"underscore", "acme_2", domain.EINVALID},
		{"dot", "acme.eu", domain.EINVALID},
		{"slash", "acme/eu", domain.EINVALID},
		{"space", "acme eu", domain.EINVALID},
		{"non-ASCII", "acmé", domain.EINVALID},
		{"trailing newline", "acme\n", domain.EINVALID},
		{"reserved for the app endpoint", "apps", domain.EINVALID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := domain.ValidateSlug("tenant", tc.slug)
			wantCode(t, err, tc.code)
			if err != nil && !strings.HasPrefix(domain.ErrorMessage(err), "tenant ") {
				t.Errorf("message %q does not name what was checked", err)
			}
		})
	}
}

func TestValidateTTL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ttl  time.Duration
		code string
	}{
		{"minimum", domain.MinTTL, ""},
		{"default", domain.DefaultTTL, ""},
		{"maximum", domain.MaxTTL, ""},
		{"just under a day", 24*time.Hour - time.Second, domain.EINVALID},
		{"an hour", time.Hour, domain.EINVALID},
		{"zero", 0, domain.EINVALID},
		{"negative", -time.Hour, domain.EINVALID},
		{"just over 90 days", domain.MaxTTL + time.Second, domain.EINVALID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantCode(t, domain.ValidateTTL(tc.ttl), tc.code)
		})
	}
}

func TestValidateRetention(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	for _, tc := range []struct {
		name       string
		retention  time.Duration
		largestTTL time.Duration
		message    string // empty: accepted
	}{
		{"seven days, no scopes", domain.MinRetention, 0, ""},
		{"default retention, default TTL", 30 * day, domain.DefaultTTL, ""},
		{"equal to the largest TTL", 60 * day, 60 * day, ""},
		{"under seven days", 7*day - time.Minute, 0, "retention must be at least 7 days (168h), got 167h59m; pass a longer --retention"},
		{"under the largest TTL", 30 * day, 60 * day,
			"retention 720h is shorter than the 1440h TTL of scope contact.snapshot; pass --retention 1440h or more, or lower that TTL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := domain.ValidateRetention(tc.retention, tc.largestTTL, "scope contact.snapshot")
			if tc.message == "" {
				wantCode(t, err, "")
				return
			}
			wantCode(t, err, domain.EINVALID)
			if got := domain.ErrorMessage(err); got != tc.message {
				t.Errorf("message %q, want %q", got, tc.message)
			}
		})
	}
}

func TestDefaultScope(t *testing.T) {
	t.Parallel()
	name := domain.ScopeName{ObjectType: "contact", Action: "snapshot"}
	s := domain.DefaultScope(name)
	if s.ScopeName != name || s.TTL != domain.DefaultTTL || !s.Enabled || s.IdentifierRule.String() != "event_id" {
		t.Fatalf("DefaultScope = %+v", s)
	}
	if got := name.String(); got != "contact.snapshot" {
		t.Errorf("String() = %q", got)
	}
	ep := domain.ProviderEndpoint{Scopes: map[domain.ScopeName]domain.Scope{
		name: {ScopeName: name, TTL: domain.MinTTL, Enabled: false},
	}}
	if got := ep.Scope(name); got.TTL != domain.MinTTL || got.Enabled {
		t.Errorf("a stored scope is not used: %+v", got)
	}
	other := domain.ScopeName{ObjectType: "deal", Action: "snapshot"}
	if got := ep.Scope(other); got.TTL != domain.DefaultTTL || !got.Enabled {
		t.Errorf("an unused scope does not get the defaults: %+v", got)
	}
}

func TestValidateScopeName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		objectType, verb string
		code             string
	}{
		{"contact snapshot", "contact", "snapshot", ""},
		{"dot in the action", "contact", "property.changed", ""},
		{"199 characters", strings.Repeat("o", 100), strings.Repeat("a", 99), ""},
		{"no object type", "", "snapshot", domain.EINVALID},
		{"no action", "contact", "", domain.EINVALID},
		{"dot in the object type", "crm.contact", "snapshot", domain.EINVALID},
		{"200 characters", strings.Repeat("o", 100), strings.Repeat("a", 100), domain.EINVALID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantCode(t, domain.ValidateScopeName(domain.ScopeName{ObjectType: tc.objectType, Action: tc.verb}), tc.code)
		})
	}
}

func TestParseIdentifierRule(t *testing.T) {
	t.Parallel()
	e := domain.Event{EventID: "msg_1", ObjectID: "c-1", Timestamp: "2026-11-29T10:00:00Z",
		Snapshot: json.RawMessage(`{"email":"a@example.com","score":{"b":2,"a":1}}`)}
	for _, tc := range []struct {
		name, rule string
		canonical  string // what String gives back; "" when the rule is invalid
		identifier string
	}{
		{"event id", "event_id", "event_id", "msg_1"},
		{"empty means event id", "", "event_id", "msg_1"},
		{"object and timestamp", "object_id+timestamp", "object_id+timestamp", "c-1@2026-11-29T10:00:00Z"},
		{"fields, spaces trimmed", "object_id+fields: email , score", "object_id+fields:email,score",
			`c-1|email="a@example.com"|score={"a":1,"b":2}`},
		{"missing field", "object_id+fields:phone", "object_id+fields:phone", "c-1|phone="},
		{"no fields", "object_id+fields:", "", ""},
		{"only commas", "object_id+fields:, ,", "", ""},
		{"unknown", "eventid", "", ""},
		{"object id alone", "object_id", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := domain.ParseIdentifierRule(tc.rule)
			if tc.canonical == "" {
				wantCode(t, err, domain.EINVALID)
				return
			}
			wantCode(t, err, "")
			if got := r.String(); got != tc.canonical {
				t.Errorf("String() = %q, want %q", got, tc.canonical)
			}
			if got := r.Identifier(e); got != tc.identifier {
				t.Errorf("Identifier = %q, want %q", got, tc.identifier)
			}
		})
	}
}

func TestEventLogQueryValidate(t *testing.T) {
	t.Parallel()
	noon := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		q    domain.EventLogQuery
		code string
	}{
		{"zero query", domain.EventLogQuery{}, ""},
		{"every outcome", domain.EventLogQuery{Outcome: domain.RevisionConflict}, ""},
		{"rejected outcome", domain.EventLogQuery{Outcome: domain.Rejected}, ""},
		{"unknown outcome", domain.EventLogQuery{Outcome: "lost"}, domain.EINVALID},
		{"delivery_rejected is not an event outcome", domain.EventLogQuery{Outcome: domain.DeliveryRejected}, domain.EINVALID},
		{"range", domain.EventLogQuery{From: noon, Before: noon.Add(time.Hour)}, ""},
		{"only a start", domain.EventLogQuery{From: noon}, ""},
		{"only an end", domain.EventLogQuery{Before: noon}, ""},
		{"empty range", domain.EventLogQuery{From: noon, Before: noon}, domain.EINVALID},
		{"reversed range", domain.EventLogQuery{From: noon.Add(time.Hour), Before: noon}, domain.EINVALID},
		{"object filter", domain.EventLogQuery{Contains: json.RawMessage(`{"job_title":"Director"}`)}, ""},
		{"empty object filter", domain.EventLogQuery{Contains: json.RawMessage(`{}`)}, ""},
		{"array filter", domain.EventLogQuery{Contains: json.RawMessage(`["Director"]`)}, domain.EINVALID},
		{"string filter", domain.EventLogQuery{Contains: json.RawMessage(`"Director"`)}, domain.EINVALID},
		{"null filter", domain.EventLogQuery{Contains: json.RawMessage(`null`)}, domain.EINVALID},
		{"broken JSON", domain.EventLogQuery{Contains: json.RawMessage(`{"job_title":`)}, domain.EINVALID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantCode(t, tc.q.Validate(), tc.code)
		})
	}
}

func TestValidateTokenName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, token, code string
	}{
		{"plain", "reporting export", ""},
		{"at the limit in runes", strings.Repeat("é", domain.MaxTokenNameLength), ""},
		{"empty", "", domain.EINVALID},
		{"blank", " \t ", domain.EINVALID},
		{"one over", strings.Repeat("x", domain.MaxTokenNameLength+1), domain.EINVALID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantCode(t, domain.ValidateTokenName(tc.token), tc.code)
		})
	}
}

func TestCheckAdminChange(t *testing.T) {
	t.Parallel()
	admin := domain.User{ID: 1, Email: "ann@example.com", IsAdmin: true}
	member := domain.User{ID: 2, Email: "bob@example.com"}
	for _, tc := range []struct {
		name   string
		actor  domain.User
		userID int64
		admin  bool
		code   string
	}{
		{"admin promotes another", admin, 2, true, ""},
		{"admin demotes another", admin, 2, false, ""},
		{"admin keeps own flag", admin, 1, true, ""},
		{"admin drops own flag", admin, 1, false, domain.ECONFLICT},
		{"member promotes self", member, 2, true, domain.ENOTFOUND},
		{"member demotes an admin", member, 1, false, domain.ENOTFOUND},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			wantCode(t, domain.CheckAdminChange(tc.actor, tc.userID, tc.admin), tc.code)
		})
	}
}

func TestOperatorMemberOf(t *testing.T) {
	t.Parallel()
	o := domain.Operator{Tenants: []string{"acme", "globex"}}
	for _, tc := range []struct {
		slug string
		want bool
	}{{"acme", true}, {"globex", true}, {"initech", false}, {"", false}} {
		t.Run(tc.slug, func(t *testing.T) {
			t.Parallel()
			if got := o.MemberOf(tc.slug); got != tc.want {
				t.Errorf("MemberOf(%q) = %v", tc.slug, got)
			}
		})
	}
}
