package domain

import (
	"reflect"
	"strings"
	"testing"
)

func TestHighlightParts(t *testing.T) {
	for _, c := range []struct {
		headline string
		want     []HighlightPart
	}{
		{"", nil},
		{"plain text", []HighlightPart{{Text: "plain text"}}},
		{"Ada \x02Lovelace\x03 of \x02London\x03", []HighlightPart{
			{Text: "Ada "}, {Text: "Lovelace", Matched: true}, {Text: " of "}, {Text: "London", Matched: true},
		}},
		{"\x02<b>\x03", []HighlightPart{{Text: "<b>", Matched: true}}},
		{"cut \x02short", []HighlightPart{{Text: "cut "}, {Text: "short", Matched: true}}},
	} {
		if got := HighlightParts(c.headline); !reflect.DeepEqual(got, c.want) {
			t.Errorf("HighlightParts(%q) = %#v, want %#v", c.headline, got, c.want)
		}
	}
}

func TestSearchValidation(t *testing.T) {
	for _, ok := range []string{"", "Lovelace", `"chief officer" -interim`, strings.Repeat("a", MaxSearchBytes)} {
		if err := (RecordQuery{Search: ok}).Validate(); err != nil {
			t.Errorf("search %q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{strings.Repeat("a", MaxSearchBytes+1), "a\x00b", "a\x02b"} {
		err := (EventLogQuery{Search: bad}).Validate()
		if ErrorCode(err) != EINVALID {
			t.Errorf("search %q: got %v, want an EINVALID error", bad, err)
		}
	}
}
