package provider_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
)

// numberless is a kind whose parser leaves Seq as it finds it.
type numberless struct {
	provider.Kind
	events []domain.Event
	err    error
}

func (k numberless) Parse(*http.Request, []byte, domain.ProviderEndpoint) ([]domain.Event, error) {
	return k.events, k.err
}

// TestParseNumbersEvents: Parse numbers the kind's events in delivery
// order, whatever Seq the kind left, and passes the kind's error on.
func TestParseNumbersEvents(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest(http.MethodPost, "/webhooks/acme/crm", nil)
	events, err := provider.Parse(numberless{events: []domain.Event{{Seq: 7, EventID: "a"}, {Seq: 7, EventID: "b"}, {EventID: "c"}}},
		r, nil, domain.ProviderEndpoint{})
	if err != nil || len(events) != 3 {
		t.Fatalf("Parse: %d events, %v", len(events), err)
	}
	for i, e := range events {
		if e.Seq != i {
			t.Errorf("event %s has Seq %d, want %d", e.EventID, e.Seq, i)
		}
	}
	bad := errors.New("not JSON")
	if _, err := provider.Parse(numberless{err: bad}, r, nil, domain.ProviderEndpoint{}); err != bad {
		t.Errorf("Parse of a body the kind refuses: %v, want %v", err, bad)
	}
}
