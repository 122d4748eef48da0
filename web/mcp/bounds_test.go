package mcp_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

// maxAnswer is what a tool answers at most.
const maxAnswer = 64 << 10

// notes is a result's notes, joined.
func notes(texts []string) string { return strings.Join(texts[1:], " ") }

// TestMCPAnswersAreBounded: every answer stays under 64 KiB. A page of
// large items holds fewer of them and says so, its next_cursor going on
// after the last one shown; an item larger than that comes alone, cut,
// with the cursor after it; a delivery's large body is cut and the rest
// of the delivery kept.
func TestMCPAnswersAreBounded(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	big := func(letter string, n int) string { return fmt.Sprintf(`{"notes":%q}`, strings.Repeat(letter, n)) }
	// Two conflicts of about 40 KB (two snapshots of 20 KB), then a
	// record of 100 KB.
	e.ConflictOf("big-1", 1, big("a", 20000), big("b", 20000))
	e.ConflictOf("big-2", 1, big("c", 20000), big("d", 20000))
	if got := e.Outcome("acme", "crm", e.Secret, "huge", webtest.SnapshotBody("h-1", 1, big("x", 100000))); got != "applied" {
		t.Fatalf("the huge snapshot: %s", got)
	}
	cs := connect(t, e, e.Token("acme"))
	bounded := func(tool string, texts []string) {
		t.Helper()
		if len(texts[0]) > maxAnswer {
			t.Fatalf("%s answered %d bytes, more than %d", tool, len(texts[0]), maxAnswer)
		}
	}

	args := map[string]any{"limit": 10}
	var conflicts []any
	for page := 1; ; page++ {
		texts, isError := call(t, cs, "list_conflicts", args)
		bounded("list_conflicts", texts)
		var answer map[string]any
		if isError || json.Unmarshal([]byte(texts[0]), &answer) != nil {
			t.Fatalf("list_conflicts page %d: %v", page, texts)
		}
		got := items(t, answer, "conflicts")
		if page == 1 && (len(got) != 1 || !strings.Contains(notes(texts), "call again with cursor set to next_cursor")) {
			t.Fatalf("list_conflicts of two 40 KB conflicts: %d items, notes %q; want one and a note", len(got), notes(texts))
		}
		conflicts = append(conflicts, field(got, "object_id")...)
		if answer["next_cursor"] == nil {
			break
		}
		args["cursor"] = answer["next_cursor"]
	}
	if fmt.Sprint(conflicts) != "[big-2 big-1]" {
		t.Fatalf("list_conflicts, page by page: %v", conflicts)
	}

	// The feed: the two 20 KB changes, then the 100 KB one, cut, with the
	// cursor after it, then nothing.
	texts, _ := call(t, cs, "read_changes", map[string]any{"limit": 100})
	bounded("read_changes", texts)
	var first map[string]any
	if json.Unmarshal([]byte(texts[0]), &first) != nil || len(items(t, first, "changes")) != 2 || len(texts) != 2 {
		t.Fatalf("read_changes page 1: %d bytes, notes %q; want the two changes that fit and a note", len(texts[0]), notes(texts))
	}
	texts, _ = call(t, cs, "read_changes", map[string]any{"limit": 100, "after": first["next_cursor"]})
	bounded("read_changes", texts)
	cursor := regexp.MustCompile(`next page starts at cursor "([^"]+)"`).FindStringSubmatch(notes(texts))
	if !strings.Contains(texts[0], `"object_id":"h-1"`) || cursor == nil ||
		!strings.Contains(notes(texts), "/api/v1/tenants/acme/changes?after=") {
		t.Fatalf("read_changes page 2: %.300s… notes %q; want h-1's change cut, with the cursor after it", texts[0], notes(texts))
	}
	if last := callJSON(t, cs, "read_changes", map[string]any{"after": cursor[1]}); len(items(t, last, "changes")) != 0 {
		t.Fatalf("read_changes after the cut change: %v, want nothing more", last)
	}

	timeline := callJSON(t, cs, "record_timeline", map[string]any{"provider": "crm", "object_type": "contact", "object_id": "h-1"})
	events := items(t, timeline, "events")
	if len(events) != 1 || !strings.Contains(fmt.Sprint(timeline["record"]), "read it with find_record") {
		t.Fatalf("record_timeline of h-1: %v", timeline)
	}

	delivery := events[0]["delivery_id"].(string)
	texts, _ = call(t, cs, "inspect_delivery", map[string]any{"delivery_id": delivery})
	bounded("inspect_delivery", texts)
	var kept map[string]any
	if err := json.Unmarshal([]byte(texts[0]), &kept); err != nil {
		t.Fatalf("inspect_delivery of a 100 KB body: %v", err)
	}
	body, _ := kept["body"].(string)
	if len(body) < 32<<10 || len(body) > 64<<10 || fmt.Sprint(field(items(t, kept, "events"), "outcome")) != "[applied]" ||
		!strings.Contains(notes(texts), `"body"`) || !strings.Contains(notes(texts), "/api/v1/tenants/acme/deliveries/"+delivery) {
		t.Fatalf("inspect_delivery of a 100 KB body: body of %d bytes, events %v, notes %q", len(body), kept["events"], notes(texts))
	}
}
