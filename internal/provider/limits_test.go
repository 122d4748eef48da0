package provider

import (
	"testing"

	"github.com/tidemark/tidemark/domain"
)

// TestMaxBody: a provider's own body limit wins; without one, its kind's
// default applies, 5 MiB for Salesforce and 1 MiB for the others.
func TestMaxBody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind    string
		maxBody int64
		want    int64
	}{
		{"standard", 0, 1 << 20},
		{"hubspot", 0, 1 << 20},
		{"shippo", 0, 1 << 20},
		{"salesforce", 0, 5 << 20},
		{"standard", 3 << 20, 3 << 20},
		{"salesforce", 512 << 10, 512 << 10},
		{"unknown", 0, DefaultMaxBody},
	} {
		if got := MaxBody(domain.Provider{Kind: tc.kind, MaxBody: tc.maxBody}); got != tc.want {
			t.Errorf("MaxBody(%s, %d) = %d, want %d", tc.kind, tc.maxBody, got, tc.want)
		}
	}
}
