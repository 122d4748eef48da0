package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// TestDestinationRefusalHidesInternalDNS (review 4, L3): a URL whose host
// resolves to an internal address, or does not resolve, is refused naming
// the host only: not the address it resolved to, nor the resolver's error
// (which names the service's DNS server). The server log keeps them.
func TestDestinationRefusalHidesInternalDNS(t *testing.T) {
	t.Parallel()
	e, logs := webtest.SetupLogged(t, postgres.DefaultReadTimeout)
	token := e.Token("acme")
	for _, tc := range []struct{ url, want, logged string }{
		{"http://localhost:8080/x?token=S3cr3t", "url: host localhost resolves to a private or internal address: " +
			"connections to private or internal addresses are refused", "localhost resolves to "},
		{"https://nothing.invalid/x", "url: host nothing.invalid does not resolve", "lookup nothing.invalid"},
	} {
		status, body := destinationCall(e, http.MethodPost, destinationsPath, token, fmt.Sprintf(`{"url": %q}`, tc.url))
		if status != http.StatusBadRequest || body["error"] != tc.want {
			t.Errorf("%s: %d %v, want 400 %q", tc.url, status, body, tc.want)
		}
		if log := logs.String(); !strings.Contains(log, tc.logged) || strings.Contains(log, "S3cr3t") {
			t.Errorf("%s: the server log does not hold %q, or holds the URL's token:\n%s", tc.url, tc.logged, log)
		}
	}
	if log := logs.String(); !strings.Contains(log, "127.0.0.1") && !strings.Contains(log, "::1") {
		t.Errorf("the server log does not name the address localhost resolved to:\n%s", log)
	}
}
