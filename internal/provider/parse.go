package provider

import (
	"net/http"

	"github.com/tidemark/tidemark/domain"
)

// Parse parses an authenticated body with kind into its events, numbered
// in delivery order (Seq). The webhook and replays share it, so a replay
// reads a body exactly as today's receiver would.
func Parse(kind Kind, r *http.Request, body []byte, p domain.ProviderEndpoint) ([]domain.Event, error) {
	events, err := kind.Parse(r, body, p)
	for i := range events {
		events[i].Seq = i
	}
	return events, err
}
