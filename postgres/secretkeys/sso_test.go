package secretkeys_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/identity"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
	"github.com/tidemark/tidemark/postgres/secretkeys"
)

// TestRekeySSOSecret: the SSO client secret is counted by the start-up
// check under the key it is sealed with and refuses a new sealing key as
// every secret does; rekey moves it under the first key, so that with
// the old key dropped single sign-on still opens it.
func TestRekeySSOSecret(t *testing.T) {
	t.Parallel()
	ctx := pgtest.AsCLI(context.Background())
	pool := testdb.New(t)
	old, _ := keyStore(t, pool, pgtest.Key)
	setup := identity.NewSSOConfig{ClientSecret: "sso-client-secret", SSOConfig: identity.SSOConfig{
		Issuer: "https://idp.example.com", ClientID: "tidemark"}}
	if err := old.SetSSO(ctx, setup); err != nil {
		t.Fatal(err)
	}
	newOnly, _ := keyStore(t, pool, otherKey)
	if err := newOnly.CheckSecrets(ctx); err == nil || !strings.Contains(err.Error(), "1 SSO client secret of 1 identity provider") {
		t.Fatalf("check with only the new key: %v, want the SSO secret counted under the old key", err)
	}
	if err := newOnly.SetSSO(ctx, setup); domain.ErrorCode(err) != domain.ECONFLICT {
		t.Fatalf("the SSO secret sealed under a key no secret in use is under: %v, want ECONFLICT", err)
	}
	both, _ := keyStore(t, pool, otherKey, pgtest.Key)
	if n, err := both.RekeySecrets(ctx, 10); err != nil || n != (secretkeys.Rekeyed{SSO: 1}) {
		t.Fatalf("rekey: %+v, %v; want the SSO secret", n, err)
	}
	if n, err := both.RekeySecrets(ctx, 10); err != nil || n != (secretkeys.Rekeyed{}) {
		t.Fatalf("second rekey: %+v, %v; want nothing", n, err)
	}
	if err := newOnly.CheckSecrets(ctx); err != nil {
		t.Fatalf("check with only the new key after rekey: %v", err)
	}
	if got, err := newOnly.SSOClientSecret(ctx); err != nil || got != "sso-client-secret" {
		t.Fatalf("the SSO secret with only the new key: %q, %v", got, err)
	}
}
