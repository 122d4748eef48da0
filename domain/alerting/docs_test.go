package alerting_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain/alerting"
)

// TestRulesDocumented: docs/alerts.md has a row for every registered rule,
// and no other, in each of its two tables (the rules with their defaults,
// and what each measures), in the order pages show them; the defaults it
// states are the definitions'.
func TestRulesDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/alerts.md")
	if err != nil {
		t.Fatal(err)
	}
	settings, measures := ruleRows(string(doc), "## Rules"), ruleRows(string(doc), "What each rule measures")
	for _, rows := range [][][]string{settings, measures} {
		var named []string
		for _, row := range rows {
			named = append(named, strings.Trim(row[0], "`"))
		}
		if want := fmt.Sprint(alerting.Rules); fmt.Sprint(named) != want {
			t.Errorf("docs/alerts.md has rows for %v, want one for each of %v", named, want)
		}
	}
	for i, d := range alerting.Defs() {
		if i >= len(settings) || len(settings[i]) < 4 {
			break
		}
		threshold, window := settings[i][2], settings[i][3]
		if want := fmt.Sprint(d.Threshold); threshold != want && !strings.HasPrefix(threshold, want+" (") {
			t.Errorf("%s: docs/alerts.md says the default threshold is %q, want %s", d.Rule, threshold, want)
		}
		if want := inWords(d.Window); window != want && !strings.HasPrefix(window, want+" (") {
			t.Errorf("%s: docs/alerts.md says the default window is %q, want %s", d.Rule, window, want)
		}
	}
}

// ruleRows returns the cells of the rows naming a rule in the first table
// after heading.
func ruleRows(doc, heading string) [][]string {
	_, after, _ := strings.Cut(doc, heading)
	var rows [][]string
	inTable := false
	for line := range strings.Lines(after) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if strings.HasPrefix(cells[0], "`") {
			rows = append(rows, cells)
		}
	}
	return rows
}

// inWords writes a window as the docs do: "6 h", "15 min".
func inWords(d time.Duration) string {
	if d%time.Hour == 0 {
		return fmt.Sprintf("%d h", d/time.Hour)
	}
	return fmt.Sprintf("%d min", d/time.Minute)
}
