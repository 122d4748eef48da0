package web

import (
	"net/http"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// shippoReceiver handles kind "shippo". Placeholder until the receiver lands.
type shippoReceiver struct{}

func shippoSetup(secret string, config map[string]string) (string, map[string]string, error) {
	return "", nil, domain.Errorf(domain.EINVALID, "provider kind shippo is not supported yet")
}

func (shippoReceiver) authenticate(r *http.Request, body []byte, p domain.ProviderEndpoint, now time.Time) (string, error) {
	return domain.SignatureInvalid, domain.Errorf(domain.EINVALID, "shippo is not supported yet")
}

func (shippoReceiver) parse(r *http.Request, body []byte, p domain.ProviderEndpoint) ([]domain.Event, error) {
	return nil, domain.Errorf(domain.EINVALID, "shippo is not supported yet")
}

func (shippoReceiver) respond(w http.ResponseWriter, deliveryID string, results []domain.Result) {
	writeJSON(w, http.StatusOK, deliveryResponse(deliveryID, results))
}
