package webtest

import (
	"bytes"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/provider"
)

// Signed builds a standard delivery to acme/crm signed with secret.
func Signed(t *testing.T, base, secret, id string, body []byte) *http.Request {
	t.Helper()
	ts := time.Now().Unix()
	sig, err := provider.SignStandard(secret, id, ts, body)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/webhooks/acme/crm", bytes.NewReader(body))
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	return req
}
