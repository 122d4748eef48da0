package apicreds_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/internal/testlog"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
)

const (
	hubToken = "pat-na1-6f1c2d3e-4a5b-6c7d-8e9f-0a1b2c3d4e5f"
	sfSecret = "F00DFACE0123456789ABCDEF0123456789ABCDEF"
)

// fixture is a store logging to log, with tenants acme and globex, each
// with a hubspot and a salesforce provider, and the CLI as the actor.
type fixture struct {
	s           *postgres.Store
	log         *testlog.Buffer
	ctx         context.Context
	acme        int64
	hub, sf     int64 // acme's
	globex      int64
	globexHubID int64
}

func setup(t *testing.T) fixture {
	t.Helper()
	logger, log := testlog.Logger()
	s, err := postgres.Open(postgres.Pools{Write: testdb.New(t)}, postgres.Options{Keys: [][]byte{pgtest.Key}, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{s: s, log: log, ctx: pgtest.AsOperator(context.Background())}
	connect := func(tenant int64, name, kind, secret string, config map[string]string) int64 {
		t.Helper()
		p, err := s.ConnectProvider(f.ctx, tenant, name, kind, secret, config)
		if err != nil {
			t.Fatal(err)
		}
		return p.ID
	}
	for _, slug := range []string{"acme", "globex"} {
		tn, err := s.CreateTenant(f.ctx, slug, "")
		if err != nil {
			t.Fatal(err)
		}
		hub := connect(tn.ID, "hub", "hubspot", "hubspot-client-secret-0123456789", nil)
		if slug == "acme" {
			f.acme, f.hub = tn.ID, hub
			f.sf = connect(tn.ID, "sf", "salesforce", "", map[string]string{"org_id": "00D5e000000AbCdEAK"})
		} else {
			f.globex, f.globexHubID = tn.ID, hub
		}
	}
	return f
}

func hubCreds() pull.Credentials {
	return pull.Credentials{Token: hubToken, BaseURL: "http://127.0.0.1:8080", AllowPrivate: true, BudgetShare: 0.25}
}

func sfCreds() pull.Credentials {
	return pull.Credentials{ClientID: "3MVG9abcdef", ClientSecret: sfSecret, LoginURL: "https://acme.my.salesforce.com",
		APIVersion: "v62.0", BudgetShare: 0.5}
}

// TestRoundTrip: what is set is what the backfill reads back, secret
// included, and what may be shown is everything but the secret, with who
// set it and when; setting again replaces; clearing leaves nothing.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, tc := range []struct {
		provider int64
		set      pull.Credentials
		secret   string
	}{{f.hub, hubCreds(), pull.SecretToken}, {f.sf, sfCreds(), pull.SecretClient}} {
		if _, ok, err := f.s.APICredentials(f.ctx, f.acme, tc.provider); ok || err != nil {
			t.Fatalf("before any is set: %v, %v", ok, err)
		}
		if err := f.s.SetAPICredentials(f.ctx, f.acme, tc.provider, tc.set); err != nil {
			t.Fatal(err)
		}
		got, ok, err := f.s.APICredentials(f.ctx, f.acme, tc.provider)
		if err != nil || !ok || got != tc.set {
			t.Fatalf("read back %+v, %v, %v; want %+v", got, ok, err, tc.set)
		}
		info, ok, err := f.s.APICredentialsInfo(f.ctx, f.acme, tc.provider)
		want := pull.Info{Secret: tc.secret, ClientID: tc.set.ClientID, LoginURL: tc.set.LoginURL, APIVersion: tc.set.APIVersion,
			BaseURL: tc.set.BaseURL, AllowPrivate: tc.set.AllowPrivate, BudgetShare: tc.set.BudgetShare,
			SetAt: info.SetAt, SetBy: pgtest.Operator.Name}
		if err != nil || !ok || info != want || time.Since(info.SetAt) > time.Minute {
			t.Fatalf("info %+v, %v, %v; want %+v", info, ok, err, want)
		}
	}

	// Setting again replaces everything: the new token, no base URL.
	replaced := pull.Credentials{Token: "pat-na1-second", BudgetShare: 1}
	if err := f.s.SetAPICredentials(f.ctx, f.acme, f.hub, replaced); err != nil {
		t.Fatal(err)
	}
	if got, _, err := f.s.APICredentials(f.ctx, f.acme, f.hub); err != nil || got != replaced {
		t.Fatalf("after a second set: %+v, %v", got, err)
	}

	if err := f.s.ClearAPICredentials(f.ctx, f.acme, f.hub); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := f.s.APICredentials(f.ctx, f.acme, f.hub); ok || err != nil {
		t.Fatalf("after clear: %v, %v", ok, err)
	}
	if _, ok, err := f.s.APICredentialsInfo(f.ctx, f.acme, f.hub); ok || err != nil {
		t.Fatalf("info after clear: %v, %v", ok, err)
	}
	if err := f.s.ClearAPICredentials(f.ctx, f.acme, f.hub); domain.ErrorCode(err) != domain.ENOTFOUND ||
		domain.ErrorMessage(err) != "provider hub has no API credentials to clear" {
		t.Fatalf("second clear: %v", err)
	}
	// The salesforce provider's are untouched.
	if got, ok, _ := f.s.APICredentials(f.ctx, f.acme, f.sf); !ok || got != sfCreds() {
		t.Fatalf("the other provider's after clear: %+v, %v", got, ok)
	}
}

// TestSecretSealedAtRest: the row holds neither secret in clear, names the
// key that sealed it, and a ciphertext moved into another provider's row
// does not open there; the failure is logged by ids, without the secret.
func TestSecretSealedAtRest(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if err := f.s.SetAPICredentials(f.ctx, f.acme, f.hub, hubCreds()); err != nil {
		t.Fatal(err)
	}
	if err := f.s.SetAPICredentials(f.ctx, f.acme, f.sf, sfCreds()); err != nil {
		t.Fatal(err)
	}
	rows, err := f.s.Pool().Query(f.ctx, `SELECT c::text, encode(ciphertext, 'escape'), key_id FROM provider_api_credentials c`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var whole, cipher, keyID string
		if err := rows.Scan(&whole, &cipher, &keyID); err != nil {
			t.Fatal(err)
		}
		n++
		for _, secret := range []string{hubToken, sfSecret} {
			if strings.Contains(whole, secret) || strings.Contains(cipher, secret) {
				t.Errorf("a row holds a secret in clear: %s", whole)
			}
		}
		if len(keyID) != 16 {
			t.Errorf("key id %q", keyID)
		}
	}
	if rows.Err() != nil || n != 2 {
		t.Fatalf("%d rows, %v", n, rows.Err())
	}

	// A ciphertext copied into another provider's row does not open there.
	if _, err := f.s.Pool().Exec(f.ctx, `UPDATE provider_api_credentials x SET ciphertext = y.ciphertext
		FROM provider_api_credentials y WHERE x.tenant_id = y.tenant_id AND x.provider_id = $1 AND y.provider_id = $2`, f.sf, f.hub); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := f.s.APICredentials(f.ctx, f.acme, f.sf); ok || err == nil || !strings.Contains(err.Error(), "cannot be decrypted") {
		t.Fatalf("moved ciphertext: %v, %v; want an error", ok, err)
	}
	line := f.log.String()
	for _, want := range []string{"provider API secret cannot be decrypted", "provider_id=" + strconv.FormatInt(f.sf, 10)} {
		if !strings.Contains(line, want) {
			t.Errorf("log %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, hubToken) || strings.Contains(line, sfSecret) {
		t.Errorf("the log holds a secret: %q", line)
	}
}

// TestTenantIsolation: another tenant's provider id is not found, for
// every method, and changes nothing of theirs.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if err := f.s.SetAPICredentials(f.ctx, f.globex, f.globexHubID, hubCreds()); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := f.s.APICredentials(f.ctx, f.acme, f.globexHubID); ok || err != nil {
		t.Errorf("acme reading globex's provider: %v, %v", ok, err)
	}
	if _, ok, err := f.s.APICredentialsInfo(f.ctx, f.acme, f.globexHubID); ok || err != nil {
		t.Errorf("acme reading what may be shown of globex's: %v, %v", ok, err)
	}
	if err := f.s.SetAPICredentials(f.ctx, f.acme, f.globexHubID, pull.Credentials{Token: "pat-na1-intruder"}); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Errorf("acme setting globex's: %v, want not found", err)
	}
	if err := f.s.ClearAPICredentials(f.ctx, f.acme, f.globexHubID); domain.ErrorCode(err) != domain.ENOTFOUND ||
		domain.ErrorMessage(err) != "provider not found" {
		t.Errorf("acme clearing globex's: %v, want provider not found", err)
	}
	if got, ok, err := f.s.APICredentials(f.ctx, f.globex, f.globexHubID); !ok || err != nil || got != hubCreds() {
		t.Errorf("globex's own after acme's attempts: %+v, %v, %v", got, ok, err)
	}
}

// TestAudited: setting and clearing are audited with the non-secret
// fields; a refused change records nothing; deleting the provider deletes
// its credentials.
func TestAudited(t *testing.T) {
	t.Parallel()
	f := setup(t)
	if err := f.s.SetAPICredentials(f.ctx, f.acme, f.sf, sfCreds()); err != nil {
		t.Fatal(err)
	}
	if err := f.s.SetAPICredentials(f.ctx, f.acme, f.hub, hubCreds()); err != nil {
		t.Fatal(err)
	}
	if err := f.s.ClearAPICredentials(f.ctx, f.acme, f.sf); err != nil {
		t.Fatal(err)
	}
	if err := f.s.SetAPICredentials(f.ctx, f.acme, f.hub, pull.Credentials{}); domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("credentials without a secret: %v", err)
	}
	entries, _, err := f.s.AuditLog(f.ctx, domain.AuditQuery{TenantID: f.acme}, domain.Page{Limit: domain.MaxPageLimit})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		if e.Action == pull.AuditCredentialsSet || e.Action == pull.AuditCredentialsClear {
			if e.Actor != pgtest.Operator.Name || e.ActorKind != domain.ActorOperator {
				t.Errorf("entry %s by %s (%s)", e.Action, e.Actor, e.ActorKind)
			}
			got = append(got, e.Action+" "+e.Target+": "+e.Summary)
		}
		if strings.Contains(e.Summary, hubToken) || strings.Contains(e.Summary, sfSecret) {
			t.Errorf("entry %s holds a secret: %q", e.Action, e.Summary)
		}
	}
	want := []string{ // newest first
		"api_credentials_clear sf: cleared client id 3MVG9abcdef and its client secret",
		"api_credentials_set hub: access token; API base URL http://127.0.0.1:8080; private addresses allowed; at most 25% of the API budget",
		"api_credentials_set sf: client id 3MVG9abcdef; client secret; login URL https://acme.my.salesforce.com; API version v62.0; at most 50% of the API budget",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	if _, err := f.s.Pool().Exec(f.ctx, `DELETE FROM providers WHERE tenant_id = $1 AND id = $2`, f.acme, f.hub); err != nil {
		t.Fatal(err)
	}
	if n := pgtest.Scalar(t, f.s.Pool(), `SELECT count(*) FROM provider_api_credentials`); n != 0 {
		t.Fatalf("%d credentials left after their provider was deleted", n)
	}
}

// TestSetRefusesANewKey: as for signing secrets, a store whose first key
// none of the active signing secrets use refuses to seal API credentials,
// unless the caller moves to the new key on purpose.
func TestSetRefusesANewKey(t *testing.T) {
	t.Parallel()
	f := setup(t)
	other, err := postgres.Open(postgres.Pools{Write: f.s.Pool()}, postgres.Options{Keys: [][]byte{[]byte("fedcba9876543210fedcba9876543210"), pgtest.Key}})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.SetAPICredentials(f.ctx, f.acme, f.hub, hubCreds()); domain.ErrorCode(err) != domain.ECONFLICT ||
		!strings.Contains(err.Error(), "would be sealed under key id") {
		t.Fatalf("under a new key: %v, want a conflict", err)
	}
	if err := other.SetAPICredentials(postgres.AllowNewKey(f.ctx), f.acme, f.hub, hubCreds()); err != nil {
		t.Fatalf("under a new key on purpose: %v", err)
	}
	if got, ok, err := other.APICredentials(f.ctx, f.acme, f.hub); !ok || err != nil || got != hubCreds() {
		t.Fatalf("read back: %+v, %v, %v", got, ok, err)
	}
}
