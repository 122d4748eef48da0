package domain

import (
	"strings"
	"testing"
)

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
