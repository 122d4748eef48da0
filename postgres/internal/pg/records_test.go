package pg

import (
	"strings"
	"testing"
)

// TestPropertyRevisionFragmentsAgree: the fragments differ by their key
// alone.
func TestPropertyRevisionFragmentsAgree(t *testing.T) {
	for key, fragment := range map[string]string{"e.property": PropertyRevisionOfEvent, "t.property": PropertyRevisionOfTarget} {
		if got := strings.ReplaceAll(fragment, key, "change.key"); got != PropertyRevisionOfChangeKey {
			t.Errorf("the fragment of %s differs from change.key's by more than its key:\n%s\n%s", key, got, PropertyRevisionOfChangeKey)
		}
	}
}
