package web

import (
	"fmt"

	"github.com/tidemark/tidemark/domain"
)

// ProviderSetup checks what a new provider of kind needs and completes it:
// the secret (generated when empty; "" for a kind that signs nothing) and
// the kind's settings with their defaults. Errors are EINVALID and say
// which flag or field to fix.
func ProviderSetup(kind, secret string, config map[string]string) (string, map[string]string, error) {
	if config == nil {
		config = map[string]string{}
	}
	switch kind {
	case domain.KindStandard:
		if secret == "" {
			return NewStandardSecret(), config, nil
		}
		return secret, config, ValidateStandardSecret(secret)
	case domain.KindShippo:
		return shippoSetup(secret, config)
	case domain.KindSalesforce:
		return salesforceSetup(secret, config)
	case domain.KindHubSpot:
		return hubspotSetup(secret, config)
	}
	return "", nil, domain.Errorf(domain.EINVALID, "provider kind %q is not supported yet; supported: standard, hubspot, shippo, salesforce", kind)
}

// NewProviderSecret returns a fresh secret for a rotation of p.
func NewProviderSecret(p domain.Provider) (string, error) {
	secret, _, err := ProviderSetup(p.Kind, "", p.Config)
	if err == nil && secret == "" {
		err = fmt.Errorf("providers of kind %s have no secret to rotate", p.Kind)
	}
	return secret, err
}
