package pg

import (
	"encoding/json"
	"fmt"

	"github.com/tidemark/tidemark/domain/stream"
)

// natsSealed is how a NATS destination's credentials are sealed: one JSON
// object, under AADDestinationNATS.
type natsSealed struct {
	Creds string `json:"creds,omitempty"`
	NKey  string `json:"nkey,omitempty"`
	TLSCA string `json:"tls_ca,omitempty"`
}

// SealNATS seals a NATS destination's credentials under the first key,
// bound to the tenant and destination.
func (k *Keyring) SealNATS(tenantID, destinationID int64, a stream.NATSAuth) (SealedSecret, error) {
	plain, err := json.Marshal(natsSealed(a))
	if err != nil {
		return SealedSecret{}, err
	}
	return k.SealDestinationNATS(tenantID, destinationID, string(plain))
}

// OpenNATS opens what SealNATS sealed. Its errors never quote the
// plaintext.
func (k *Keyring) OpenNATS(s SealedSecret) (stream.NATSAuth, error) {
	plain, err := k.Open(s)
	if err != nil {
		return stream.NATSAuth{}, err
	}
	var a natsSealed
	if err := json.Unmarshal([]byte(plain), &a); err != nil {
		return stream.NATSAuth{}, fmt.Errorf("NATS credentials of destination %d are not a JSON object", s.ProviderID)
	}
	return stream.NATSAuth(a), nil
}
