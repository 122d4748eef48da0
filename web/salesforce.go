package web

import (
	"net/http"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// salesforceReceiver handles kind "salesforce". Placeholder until the receiver lands.
type salesforceReceiver struct{}

func salesforceSetup(secret string, config map[string]string) (string, map[string]string, error) {
	return "", nil, domain.Errorf(domain.EINVALID, "provider kind salesforce is not supported yet")
}

func (salesforceReceiver) authenticate(r *http.Request, body []byte, p domain.ProviderEndpoint, now time.Time) (string, error) {
	return domain.SignatureInvalid, domain.Errorf(domain.EINVALID, "salesforce is not supported yet")
}

func (salesforceReceiver) parse(r *http.Request, body []byte, p domain.ProviderEndpoint) ([]domain.Event, error) {
	return nil, domain.Errorf(domain.EINVALID, "salesforce is not supported yet")
}

func (salesforceReceiver) respond(w http.ResponseWriter, deliveryID string, results []domain.Result) {
	writeJSON(w, http.StatusOK, deliveryResponse(deliveryID, results))
}
