package demo

import (
	"context"
	crand "crypto/rand"
	"encoding/base64"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/postgres"
)

// The demo workspace of the embedded default: its tenant, the provider
// serve prints a send command for, and the demo admin.
const (
	Tenant   = "demo"
	Provider = "crm"
	Email    = "demo@tidemark.local"
)

// Create creates the demo admin, with the password it returns, the
// demo tenant and its provider. An operator left by a start that failed
// before the tenant existed keeps its unshown password (user password
// resets it): the password is "" then.
func Create(ctx context.Context, store *postgres.Store) (password string, err error) {
	password = newPassword()
	switch err := store.CreateUser(ctx, Email, password, true, "", ""); {
	case domain.ErrorCode(err) == domain.ECONFLICT:
		password = ""
	case err != nil:
		return "", err
	}
	t, err := store.CreateTenant(ctx, Tenant, "Demo workspace")
	if err != nil {
		return "", err
	}
	if _, err := store.ConnectProvider(ctx, t.ID, Provider, provider.Standard.Name(), provider.NewStandardSecret(), nil); err != nil {
		return "", err
	}
	return password, nil
}

// newPassword returns a random password for the demo operator.
func newPassword() string {
	raw := make([]byte, 12)
	crand.Read(raw)
	return base64.RawURLEncoding.EncodeToString(raw)
}
