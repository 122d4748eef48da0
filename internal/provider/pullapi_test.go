package provider_test

import (
	"testing"

	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/provider"
)

// TestPullAPI: HubSpot's API takes a token, Salesforce's client
// credentials; the other kinds, and an unknown one, have none.
func TestPullAPI(t *testing.T) {
	t.Parallel()
	for kind, want := range map[string]pull.API{"hubspot": pull.TokenAPI, "salesforce": pull.ClientCredentialsAPI,
		"standard": pull.NoAPI, "shippo": pull.NoAPI, "telepathy": pull.NoAPI} {
		if got := provider.PullAPI(kind); got != want {
			t.Errorf("PullAPI(%q) = %d, want %d", kind, got, want)
		}
	}
}
