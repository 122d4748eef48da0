package snapshot

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
)

func TestDisplayName(t *testing.T) {
	for _, c := range []struct{ objectType, snap, want string }{
		{"contact", `{"firstname":"Ada","lastname":"Lovelace","email":"ada@example.com"}`, "Ada Lovelace"},
		{"contact", `{"FirstName":"Ada","email":"ada@example.com"}`, "Ada"},
		{"contact", `{"email":" ada@example.com "}`, "ada@example.com"},
		{"contact", `{"properties":{"firstname":"Grace","lastname":"Hopper"}}`, "Grace Hopper"},
		{"company", `{"domain":"acme.example","name":"Acme"}`, "Acme"},
		{"deal", `{"dealname":"Renewal 2027","name":"x"}`, "Renewal 2027"},
		{"lead", `{"email":"ann@example.com","name":"Ann"}`, "ann@example.com"},
		{"ticket", `{"title":"Broken","id":7}`, "Broken"},
		{"ticket", `{"name":7}`, "7"},
		{"contact", `{"job_title":"CTO"}`, ""},
		{"contact", `not json`, ""},
		{"contact", `{"name":"` + strings.Repeat("a", 100) + `"}`, strings.Repeat("a", 79) + "…"},
	} {
		if got := DisplayName(c.objectType, []byte(c.snap)); got != c.want {
			t.Errorf("DisplayName(%s, %s) = %q, want %q", c.objectType, c.snap, got, c.want)
		}
	}
}

func TestMatches(t *testing.T) {
	show := func(snap, search string) string {
		var out []string
		for _, m := range Matches([]byte(snap), search, 3) {
			var b strings.Builder
			for _, p := range m.Parts {
				if p.Matched {
					fmt.Fprintf(&b, "[%s]", p.Text)
				} else {
					b.WriteString(p.Text)
				}
			}
			out = append(out, m.Field+": "+b.String())
		}
		return strings.Join(out, " | ")
	}
	for _, c := range []struct{ snap, search, want string }{
		{`{"job_title":"VP Sales","company":"Acme"}`, "sales", "job_title: VP [Sales]"},
		{`{"job_title":"VP Sales","company":"Sales Co"}`, `"vp sales" -intern`, "company: [Sales] Co | job_title: [VP] [Sales]"},
		{`{"a":{"b":["x","salesforce"]}}`, "salesforce or nothing", "a.b[1]: [salesforce]"},
		{`{"email":"ada@northwind.example"}`, "ada@northwind.example", "email: [ada]@[northwind].[example]"},
		{`{"n":7,"k":"sales"}`, "7", ""},
		{`{"t":"<b>Sales</b>"}`, "sales", "t: <b>[Sales]</b>"},
		{`{"a":"x"}`, "-x", ""},
	} {
		if got := show(c.snap, c.search); got != c.want {
			t.Errorf("Matches(%s, %q) = %q, want %q", c.snap, c.search, got, c.want)
		}
	}
	long := `{"note":"` + strings.Repeat("word ", 60) + `sales ` + strings.Repeat("tail ", 60) + `"}`
	got := show(long, "sales")
	if !strings.HasPrefix(got, "note: …") || !strings.Contains(got, "[sales]") || len([]rune(got)) > MaxValueRunes+20 {
		t.Errorf("a long value: %q", got)
	}
}

func TestHeadlineParts(t *testing.T) {
	for _, c := range []struct {
		headline string
		want     []domain.HighlightPart
	}{
		{"", nil},
		{"plain text", []domain.HighlightPart{{Text: "plain text"}}},
		{"Ada \x02Lovelace\x03 of \x02London\x03", []domain.HighlightPart{
			{Text: "Ada "}, {Text: "Lovelace", Matched: true}, {Text: " of "}, {Text: "London", Matched: true},
		}},
		{"\x02<b>\x03", []domain.HighlightPart{{Text: "<b>", Matched: true}}},
		{"cut \x02short", []domain.HighlightPart{{Text: "cut "}, {Text: "short", Matched: true}}},
	} {
		if got := HeadlineParts(c.headline); !reflect.DeepEqual(got, c.want) {
			t.Errorf("HeadlineParts(%q) = %#v, want %#v", c.headline, got, c.want)
		}
	}
}
