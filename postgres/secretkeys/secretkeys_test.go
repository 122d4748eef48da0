package secretkeys_test

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/internal/testlog"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pg"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
	"github.com/tidemark/tidemark/postgres/secretkeys"
)

var otherKey = []byte("fedcba9876543210fedcba9876543210")

// keyStore opens a store on pool with keys, logging to the returned buffer.
func keyStore(t *testing.T, pool *pgxpool.Pool, keys ...[]byte) (*postgres.Store, *testlog.Buffer) {
	t.Helper()
	logger, log := testlog.Logger()
	s, err := postgres.Open(postgres.Pools{Write: pool}, postgres.Options{Keys: keys, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	return s, log
}

func keyID(t *testing.T, key []byte) string {
	t.Helper()
	k, err := pg.NewKeyring([][]byte{key})
	if err != nil {
		t.Fatal(err)
	}
	return k.SealerID()
}

// legacyProvider connects a provider whose secret is stored as before
// migration 00014: sealed under key without associated data.
func legacyProvider(t *testing.T, s *postgres.Store, key []byte, tenant, name, secret string) int64 {
	t.Helper()
	ctx := pgtest.AsOperator(context.Background())
	tn, err := s.Tenant(ctx, tenant)
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		tn, err = s.CreateTenant(ctx, tenant, "")
	}
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.ConnectProvider(ctx, tn.ID, name, "standard", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	nonce := make([]byte, aead.NonceSize())
	rand.Read(nonce)
	if _, err := s.Pool().Exec(ctx, `INSERT INTO provider_secrets (tenant_id, provider_id, key_id, aad_version, ciphertext)
		VALUES ($1, $2, $3, 0, $4)`, tn.ID, p.ID, keyID(t, key), aead.Seal(nonce, nonce, []byte(secret), nil)); err != nil {
		t.Fatal(err)
	}
	return p.ID
}

func secretsOf(t *testing.T, s *postgres.Store, tenant, provider string) []string {
	t.Helper()
	p, err := s.Endpoint(context.Background(), tenant, provider)
	if err != nil {
		t.Fatalf("endpoint %s/%s: %v", tenant, provider, err)
	}
	return p.Secrets
}

// swapCiphertexts moves the active secrets of two providers into each
// other's rows, as someone with write access to the table could.
func swapCiphertexts(t *testing.T, s *postgres.Store, a, b int64) {
	t.Helper()
	ctx := context.Background()
	// Read, then written row by row: on Citus the two tenants' rows are on
	// different shards, which one UPDATE ... FROM cannot join.
	type sealed struct {
		tenant, provider int64
		ciphertext       []byte
		keyID            string
		aad              int
	}
	rows, err := s.Pool().Query(ctx, `SELECT tenant_id, provider_id, ciphertext, key_id, aad_version FROM provider_secrets
		WHERE retired_at IS NULL AND provider_id IN ($1, $2) ORDER BY provider_id`, a, b)
	if err != nil {
		t.Fatal(err)
	}
	both, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (sealed, error) {
		var x sealed
		return x, row.Scan(&x.tenant, &x.provider, &x.ciphertext, &x.keyID, &x.aad)
	})
	if err != nil || len(both) != 2 {
		t.Fatalf("active secrets of providers %d and %d: %d (%v), want 2", a, b, len(both), err)
	}
	for i, x := range both {
		y := both[1-i]
		if _, err := s.Pool().Exec(ctx, `UPDATE provider_secrets SET ciphertext = $3, key_id = $4, aad_version = $5
			WHERE tenant_id = $1 AND provider_id = $2 AND retired_at IS NULL`, x.tenant, x.provider, y.ciphertext, y.keyID, y.aad); err != nil {
			t.Fatal(err)
		}
	}
}

// TestUndecryptableSecretIsSkipped: one secret of a provider that cannot be
// decrypted is logged by its ids and left out; the provider keeps
// authenticating with its other secret.
func TestUndecryptableSecretIsSkipped(t *testing.T) {
	t.Parallel()
	ctx := pgtest.AsOperator(context.Background())
	s, log := keyStore(t, testdb.New(t), pgtest.Key)
	p := pgtest.Provider(t, s, "acme", "crm") // secret whsec_dGVzdA==
	const newest = "whsec_bmV3ZXN0IHNlY3JldA=="
	if err := s.RotateProviderSecret(ctx, p.TenantID, p.ID, newest); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := s.Pool().QueryRow(ctx, `UPDATE provider_secrets SET ciphertext = set_byte(ciphertext, 20, get_byte(ciphertext, 20) # 1)
		WHERE tenant_id = $1 AND provider_id = $2 AND id = (SELECT max(id) FROM provider_secrets WHERE provider_id = $2)
		RETURNING id`, p.TenantID, p.ID).Scan(&id); err != nil {
		t.Fatal(err)
	}

	if got := secretsOf(t, s, "acme", "crm"); !slices.Equal(got, []string{"whsec_dGVzdA=="}) {
		t.Fatalf("endpoint secrets %q, want only the one that decrypts", got)
	}
	if got, err := s.NewestProviderSecret(ctx, p.TenantID, p.ID); err != nil || got != "whsec_dGVzdA==" {
		t.Fatalf("newest secret %q, %v; want the older one that decrypts", got, err)
	}
	line := log.String()
	for _, want := range []string{"provider secret cannot be decrypted", "key_id=" + keyID(t, pgtest.Key),
		"tenant_id=" + strconv.FormatInt(p.TenantID, 10), "provider_id=" + strconv.FormatInt(p.ID, 10), "secret_id=" + strconv.FormatInt(id, 10)} {
		if !strings.Contains(line, want) {
			t.Errorf("log %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "whsec_") {
		t.Errorf("log shows a secret: %q", line)
	}
	if n := strings.Count(line, "cannot be decrypted"); n != 1 {
		t.Errorf("logged %d times, want once per 5m", n)
	}
}

// TestRekeySecrets: with two keys the old secrets still open; rekey moves
// every secret (retired and unbound ones too) under the first key, a second
// run changes nothing, and then the old key is no longer needed.
func TestRekeySecrets(t *testing.T) {
	t.Parallel()
	ctx := pgtest.AsOperator(context.Background())
	pool := testdb.New(t)
	old, _ := keyStore(t, pool, pgtest.Key)
	a := pgtest.Provider(t, old, "acme", "a")
	if err := old.RotateProviderSecret(ctx, a.TenantID, a.ID, "whsec_cm90YXRlZA=="); err != nil {
		t.Fatal(err)
	}
	if err := old.RotateProviderSecret(ctx, a.TenantID, a.ID, "whsec_bmV3ZXN0"); err != nil { // retires the first
		t.Fatal(err)
	}
	legacyProvider(t, old, pgtest.Key, "globex", "b", "whsec_bGVnYWN5")

	both, _ := keyStore(t, pool, otherKey, pgtest.Key)
	if err := both.CheckSecrets(ctx); err != nil {
		t.Fatalf("check with both keys: %v", err)
	}
	if got := secretsOf(t, both, "acme", "a"); !slices.Equal(got, []string{"whsec_bmV3ZXN0", "whsec_cm90YXRlZA=="}) {
		t.Fatalf("secrets under the second key: %q", got)
	}
	newOnly, _ := keyStore(t, pool, otherKey)
	err := newOnly.CheckSecrets(ctx)
	if err == nil || !strings.Contains(err.Error(), "key id "+keyID(t, pgtest.Key)+" (3 active secrets of 2 providers)") {
		t.Fatalf("check with only the new key: %v, want the old key id with its counts", err)
	}

	if n, err := both.RekeySecrets(ctx, 2); err != nil || n != (secretkeys.Rekeyed{Providers: 4}) {
		t.Fatalf("rekey: %+v, %v; want 4 provider secrets (three active, one retired)", n, err)
	}
	if n, err := both.RekeySecrets(ctx, 2); err != nil || n != (secretkeys.Rekeyed{}) {
		t.Fatalf("second rekey: %+v, %v; want 0", n, err)
	}
	if err := newOnly.CheckSecrets(ctx); err != nil {
		t.Fatalf("check with only the new key after rekey: %v", err)
	}
	if got := secretsOf(t, newOnly, "globex", "b"); !slices.Equal(got, []string{"whsec_bGVnYWN5"}) {
		t.Fatalf("legacy secret after rekey: %q", got)
	}
	oldOnly, _ := keyStore(t, pool, pgtest.Key)
	if err := oldOnly.CheckSecrets(ctx); err == nil || !strings.Contains(err.Error(), keyID(t, otherKey)) {
		t.Fatalf("check with only the old key after rekey: %v, want the new key id", err)
	}
	if n, err := oldOnly.RekeySecrets(ctx, 10); err == nil || n != (secretkeys.Rekeyed{}) || !strings.Contains(err.Error(), "4 under key id "+keyID(t, otherKey)) {
		t.Fatalf("rekey without the key the secrets are under: %+v, %v", n, err)
	}
}

// TestRekeyBindsSecretsToProvider: a secret sealed before the binding opens
// in any row; after rekey, a ciphertext moved into another provider's row
// no longer decrypts there.
func TestRekeyBindsSecretsToProvider(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, log := keyStore(t, testdb.New(t), pgtest.Key)
	a := legacyProvider(t, s, pgtest.Key, "acme", "a", "whsec_c2VjcmV0IGE=")
	b := legacyProvider(t, s, pgtest.Key, "globex", "b", "whsec_c2VjcmV0IGI=")

	swapCiphertexts(t, s, a, b)
	if got := secretsOf(t, s, "acme", "a"); !slices.Equal(got, []string{"whsec_c2VjcmV0IGI="}) {
		t.Fatalf("unbound secret moved to another row: %q, want it to open there (the hole rekey closes)", got)
	}
	swapCiphertexts(t, s, a, b)

	if n, err := s.RekeySecrets(ctx, 500); err != nil || n.Providers != 2 {
		t.Fatalf("rekey: %+v, %v", n, err)
	}
	if got := secretsOf(t, s, "acme", "a"); !slices.Equal(got, []string{"whsec_c2VjcmV0IGE="}) {
		t.Fatalf("after rekey: %q", got)
	}
	swapCiphertexts(t, s, a, b)
	if got := secretsOf(t, s, "acme", "a"); len(got) != 0 {
		t.Fatalf("bound secret opened in another provider's row: %q", got)
	}
	if got := secretsOf(t, s, "globex", "b"); len(got) != 0 {
		t.Fatalf("bound secret opened in another provider's row: %q", got)
	}
	if n := strings.Count(log.String(), "provider secret cannot be decrypted"); n != 2 {
		t.Fatalf("%d undecryptable secrets logged, want 2:\n%s", n, log)
	}
	// New secrets are bound from the start.
	c := pgtest.Provider(t, s, "acme", "c")
	swapCiphertexts(t, s, a, c.ID)
	if got := secretsOf(t, s, "acme", "a"); len(got) != 0 {
		t.Fatalf("a new secret opened in another provider's row: %q", got)
	}
}

// TestStoreWithoutKeys: everything but provider secrets works; secret
// operations return postgres.ErrNoKey and write nothing.
func TestStoreWithoutKeys(t *testing.T) {
	t.Parallel()
	ctx := pgtest.AsOperator(context.Background())
	s, _ := keyStore(t, testdb.New(t))
	tn, err := s.CreateTenant(ctx, "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConnectProvider(ctx, tn.ID, "crm", "standard", "whsec_dGVzdA==", nil); !errors.Is(err, postgres.ErrNoKey) {
		t.Fatalf("connect with a secret: %v, want postgres.ErrNoKey", err)
	}
	if names, err := s.ProviderNames(ctx, tn.ID); err != nil || len(names) != 0 {
		t.Fatalf("providers after the refused connect: %q, %v", names, err)
	}
	if err := s.CheckSecrets(ctx); !errors.Is(err, postgres.ErrNoKey) {
		t.Fatalf("check: %v", err)
	}
	if _, err := s.RekeySecrets(ctx, 10); !errors.Is(err, postgres.ErrNoKey) {
		t.Fatalf("rekey: %v", err)
	}
}
