package shape_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/alerting"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/shape"
)

func change(position int64, changed []string, snapshot string, previous *int64) stream.Change {
	rev := position
	return stream.Change{TenantID: 7, Position: position, Type: stream.ChangeApplied, Provider: "crm", ObjectType: "contact",
		ObjectID: "c-1", Revision: &rev, PreviousRevision: previous, Changed: changed, Snapshot: json.RawMessage(snapshot),
		CommittedAt: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
}

// TestCheck: what is refused at the door, and how it is said.
func TestCheck(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ filter, transform, want string }{
		{`"lifecyclestage" in change.changed && change.snapshot.lifecyclestage == "customer"`, "", ""},
		{`change.snapshot.active`, "", ""}, // dyn: checked per change
		{"change.type ==\n  ", "", "filter: ERROR:2:3: Syntax error"},
		{`chnage.type == "a"`, "", "filter: ERROR:1:1: undeclared reference to 'chnage' (did you mean 'change'?)"},
		{`1 + "a" == 2`, "", "filter: ERROR:1:3: found no matching overload for '_+_' applied to '(int, string)'"},
		{`"a"`, "", "filter must return a bool, not string"},
		{"  ", "", "filter is blank"},
		{strings.Repeat("true && ", 512) + "true", "", "filter is 4100 bytes; at most 4096"},
		{`change.changed.all(a, change.changed.all(b, a != b))`, "", "filter: its estimated cost, up to"},
		{"", `{"email": change.snapshot.email}`, ""},
		{"", `change.snapshot`, ""},
		{"", `[1]`, "transform must return a map, not list(int)"},
		{"", `{1: "a"}`, "transform must return a map, not map(int, string)"},
		{"", `{"rule": alert.rule}`, "transform: ERROR:1:10: undeclared reference to 'alert'"},
	} {
		err := shape.Check(c.filter, c.transform)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q %q: %v", c.filter, c.transform, err)
		case c.want != "" && (domain.ErrorCode(err) != domain.EINVALID || !strings.HasPrefix(domain.ErrorMessage(err), c.want)):
			t.Errorf("%q %q: %v, want EINVALID %q", c.filter, c.transform, err, c.want)
		}
	}
}

// TestDocumentedExamples: the examples of docs/contract/destinations.md
// do what it says they do.
func TestDocumentedExamples(t *testing.T) {
	t.Parallel()
	four := int64(4)
	became := change(5, []string{"lifecyclestage"}, `{"email":"ana@example.com","lifecyclestage":"customer","amount":"12000"}`, &four)
	bookkeeping := change(6, []string{"hs_lastmodifieddate"}, `{"email":"ana@example.com","lifecyclestage":"customer"}`, &four)
	small := change(7, []string{"amount"}, `{"amount":5000}`, &four)
	deleted := change(8, nil, `null`, &four)
	deleted.Type = stream.ChangeDeleted
	fired := alerting.Event{TenantID: 7, ID: 3, Type: alerting.EventFired,
		Alert: alerting.Alert{ID: 1, Rule: alerting.ProviderSilent, Provider: "crm", Window: time.Hour}}
	resolved := fired
	resolved.Type = alerting.EventResolved
	other := fired
	other.Alert.Provider = ""
	for _, c := range []struct {
		filter     string
		sent, kept []stream.Change
		alertsSent []alerting.Event
		alertsKept []alerting.Event
	}{
		{`change.object_type == "contact" && "lifecyclestage" in change.changed && change.snapshot.lifecyclestage == "customer"`,
			[]stream.Change{became}, []stream.Change{bookkeeping, small}, []alerting.Event{fired}, nil},
		{`has(change.snapshot.amount) && double(change.snapshot.amount) > 10000.0`,
			[]stream.Change{became}, []stream.Change{bookkeeping, small}, nil, nil},
		{`change.changed.exists(f, !f.startsWith("hs_"))`, []stream.Change{became, small}, []stream.Change{bookkeeping}, nil, nil},
		{`has(alert.provider) && alert.provider == "crm"`, []stream.Change{became, deleted}, nil,
			[]alerting.Event{fired}, []alerting.Event{other}},
		{`(has(change.type) && change.type == "record.deleted") || (has(alert.type) && alert.type == "alert.fired")`,
			[]stream.Change{deleted}, []stream.Change{became}, []alerting.Event{fired}, []alerting.Event{resolved}},
	} {
		s, err := shape.Compile(c.filter, "")
		if err != nil {
			t.Fatalf("%s: %v", c.filter, err)
		}
		for want, changes := range map[bool][]stream.Change{true: c.sent, false: c.kept} {
			for _, ch := range changes {
				if r, err := s.Change(ch); err != nil || r.Matched != want {
					t.Errorf("%s on %s: %+v %v, want matched %v", c.filter, ch.ID(), r, err, want)
				}
			}
		}
		for want, events := range map[bool][]alerting.Event{true: c.alertsSent, false: c.alertsKept} {
			for _, e := range events {
				if ok, err := s.Alert(e); err != nil || ok != want {
					t.Errorf("%s on %s: %v %v, want %v", c.filter, e.MessageID(), ok, err, want)
				}
			}
		}
	}
	s, err := shape.Compile("", `{"email": change.snapshot.email, "stage": change.snapshot.lifecyclestage, "was": change.previous_revision}`)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Change(became)
	if err != nil || string(r.Data) != `{"email":"ana@example.com","stage":"customer","was":4}` {
		t.Errorf("transform: %s %v", r.Data, err)
	}
}

// TestEvaluationErrors: what fails on one change says which expression
// and why.
func TestEvaluationErrors(t *testing.T) {
	t.Parallel()
	c := change(1, []string{"name"}, `{"name":"a","n":0}`, nil)
	for _, x := range []struct{ filter, transform, want string }{
		{`change.snapshot.amount > 10`, "", "filter: no such key: amount"},
		{`change.snapshot.name`, "", "filter: returned string, not a bool"},
		{"", `{"x": 1 / int(change.snapshot.n)}`, "transform: division by zero"},
		{"", `change.snapshot.name`, "transform: returned string, not a map"},
		{"", `{change.revision: "a"}`, "transform: a map key is int, not a string"},
	} {
		s, err := shape.Compile(x.filter, x.transform)
		if err != nil {
			t.Fatalf("%q %q: %v", x.filter, x.transform, err)
		}
		_, err = s.Change(c)
		var e *shape.EvalError
		if !errors.As(err, &e) || err.Error() != x.want {
			t.Errorf("%q %q: %v, want %q", x.filter, x.transform, err, x.want)
		}
	}
}
