package secretkeys_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/postgres/internal/pg"
	"github.com/tidemark/tidemark/postgres/internal/pgtest"
	"github.com/tidemark/tidemark/postgres/secretkeys"
)

// signingSecrets are what destination id signs with on s.
func signingSecrets(t *testing.T, s *postgres.Store, tenantID, id int64) []string {
	t.Helper()
	got, err := s.SigningSecrets(pgtest.AsCLI(context.Background()), tenantID, id)
	if err != nil {
		t.Fatalf("signing secrets of destination %d: %v", id, err)
	}
	return got
}

// TestRekeyDestinationSecrets: the start-up check names the old key while
// destination secrets are under it; rekey moves them (a rotated one in its
// grace too) under the first key, so that with the old key dropped every
// destination still signs with the secrets it was given. An expired secret
// never signs again and is left as it is.
func TestRekeyDestinationSecrets(t *testing.T) {
	t.Parallel()
	ctx := pgtest.AsCLI(context.Background())
	pool := testdb.New(t)
	old, _ := keyStore(t, pool, pgtest.Key)
	p := pgtest.Provider(t, old, "acme", "crm") // the check and the rekey count it apart
	tenantID := p.TenantID
	create := func(url string) (stream.Destination, string) {
		t.Helper()
		d, secret, err := old.CreateDestination(ctx, tenantID, stream.NewDestination{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		return d, secret
	}
	rotate := func(id int64) string {
		t.Helper()
		secret, err := old.RotateDestinationSecret(ctx, tenantID, id)
		if err != nil {
			t.Fatal(err)
		}
		return secret
	}
	a, aSecret := create("https://203.0.113.5/hook")
	b, bFirst := create("https://203.0.113.5/b")
	bSecond := rotate(b.ID) // bFirst signs on in its grace
	c, _ := create("https://203.0.113.5/c")
	cSecond := rotate(c.ID)
	if _, err := pool.Exec(ctx, `UPDATE destination_secrets SET expires_at = now() - interval '1 minute'
		WHERE tenant_id = $1 AND destination_id = $2 AND expires_at IS NOT NULL`, tenantID, c.ID); err != nil {
		t.Fatal(err)
	}

	newOnly, _ := keyStore(t, pool, otherKey)
	err := newOnly.CheckSecrets(ctx)
	if err == nil || !strings.Contains(err.Error(),
		"key id "+keyID(t, pgtest.Key)+" (1 active secrets of 1 providers, 4 active secrets of 3 destinations)") {
		t.Fatalf("check with only the new key: %v, want the old key id with the providers' and destinations' counts", err)
	}
	both, _ := keyStore(t, pool, otherKey, pgtest.Key)
	if err := both.CheckSecrets(ctx); err != nil {
		t.Fatalf("check with both keys: %v", err)
	}

	// Batches of 3 end with a short one (4 secrets): the batching is the
	// providers'.
	if n, err := both.RekeySecrets(ctx, 3); err != nil || n != (secretkeys.Rekeyed{Providers: 1, Destinations: 4}) {
		t.Fatalf("rekey: %+v, %v; want 1 provider secret and 4 destination secrets (three current, one in its grace)", n, err)
	}
	if n, err := both.RekeySecrets(ctx, 3); err != nil || n != (secretkeys.Rekeyed{}) {
		t.Fatalf("second rekey: %+v, %v; want 0", n, err)
	}
	if err := newOnly.CheckSecrets(ctx); err != nil {
		t.Fatalf("check with only the new key after rekey: %v", err)
	}
	for _, tc := range []struct {
		id   int64
		want []string
	}{{a.ID, []string{aSecret}}, {b.ID, []string{bSecond, bFirst}}, {c.ID, []string{cSecond}}} {
		if got := signingSecrets(t, newOnly, tenantID, tc.id); !slices.Equal(got, tc.want) {
			t.Fatalf("destination %d after rekey, with only the new key: %d secrets, want the %d it was given", tc.id, len(got), len(tc.want))
		}
	}
	var left int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM destination_secrets WHERE key_id = $1`, keyID(t, pgtest.Key)).Scan(&left); err != nil || left != 1 {
		t.Fatalf("%d secrets left under the old key (%v), want only the expired one", left, err)
	}
}

// TestRekeyDestinationSecretItCannotOpen: a destination secret under a key
// the store lacks, or damaged, is left as it is and reported as the
// providers' are: counted by key id, or logged by its ids, never shown.
func TestRekeyDestinationSecretItCannotOpen(t *testing.T) {
	t.Parallel()
	ctx := pgtest.AsCLI(context.Background())
	pool := testdb.New(t)
	old, _ := keyStore(t, pool, pgtest.Key)
	tn, err := old.CreateTenant(ctx, "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	a, aSecret, err := old.CreateDestination(ctx, tn.ID, stream.NewDestination{URL: "https://203.0.113.5/hook"})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := old.CreateDestination(ctx, tn.ID, stream.NewDestination{URL: "https://203.0.113.5/b"})
	if err != nil {
		t.Fatal(err)
	}

	newOnly, _ := keyStore(t, pool, otherKey)
	if n, err := newOnly.RekeySecrets(ctx, 10); err == nil || n != (secretkeys.Rekeyed{}) ||
		!strings.Contains(err.Error(), "some destination secrets were left as they were: 2 under key id "+keyID(t, pgtest.Key)) {
		t.Fatalf("rekey without the key the secrets are under: %+v, %v", n, err)
	}

	if _, err := pool.Exec(ctx, `UPDATE destination_secrets SET ciphertext = set_byte(ciphertext, 20, get_byte(ciphertext, 20) # 1)
		WHERE tenant_id = $1 AND destination_id = $2`, tn.ID, b.ID); err != nil {
		t.Fatal(err)
	}
	both, log := keyStore(t, pool, otherKey, pgtest.Key)
	if err := both.CheckSecrets(ctx); err != nil {
		t.Fatalf("check with a damaged secret under a key it holds: %v, want it logged, not refused", err)
	}
	n, err := both.RekeySecrets(ctx, 10)
	if err == nil || n != (secretkeys.Rekeyed{Destinations: 1}) ||
		!strings.Contains(err.Error(), "some destination secrets were left as they were: 1 that failed to decrypt") {
		t.Fatalf("rekey with a damaged secret: %+v, %v; want the other rekeyed and the damaged one reported", n, err)
	}
	if got := signingSecrets(t, both, tn.ID, a.ID); !slices.Equal(got, []string{aSecret}) {
		t.Fatalf("the other destination after rekey: %d secrets, want the one it was given", len(got))
	}
	line := log.String()
	for _, want := range []string{"destination secret cannot be decrypted", "key_id=" + keyID(t, pgtest.Key),
		"destination_id=" + strconv.FormatInt(b.ID, 10)} {
		if !strings.Contains(line, want) {
			t.Errorf("log %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "whsec_") || strings.Contains(line, "provider_id") {
		t.Errorf("log shows a secret or calls it a provider's: %q", line)
	}
}

// TestRekeyNATSCredentials: a NATS destination's credentials are counted by
// the start-up check under the key they were sealed with, and rekey moves
// them under the first key, still bound to their destination, so that with
// the old key dropped they open to what the destination was given.
func TestRekeyNATSCredentials(t *testing.T) {
	t.Parallel()
	ctx := pgtest.AsCLI(context.Background())
	pool := testdb.New(t)
	old, _ := keyStore(t, pool, pgtest.Key)
	tn, err := old.CreateTenant(ctx, "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	given := stream.NATSAuth{Creds: "-----BEGIN NATS USER JWT-----\n...", TLSCA: "-----BEGIN CERTIFICATE-----\n..."}
	d, _, err := old.CreateDestination(ctx, tn.ID, stream.NewDestination{NATSURL: "nats://203.0.113.5:4222", Subject: "crm", NATS: given})
	if err != nil {
		t.Fatal(err)
	}

	newOnly, _ := keyStore(t, pool, otherKey)
	err = newOnly.CheckSecrets(ctx)
	if err == nil || !strings.Contains(err.Error(),
		"key id "+keyID(t, pgtest.Key)+" (1 active secrets of 1 destinations, 1 NATS credentials of 1 destinations)") {
		t.Fatalf("check with only the new key: %v, want the old key id with the NATS credentials counted", err)
	}
	both, _ := keyStore(t, pool, otherKey, pgtest.Key)
	if n, err := both.RekeySecrets(ctx, 10); err != nil || n != (secretkeys.Rekeyed{Destinations: 1, NATSCredentials: 1}) {
		t.Fatalf("rekey: %+v, %v; want 1 destination secret and 1 NATS credentials", n, err)
	}
	if n, err := both.RekeySecrets(ctx, 10); err != nil || n != (secretkeys.Rekeyed{}) {
		t.Fatalf("second rekey: %+v, %v; want 0", n, err)
	}
	if err := newOnly.CheckSecrets(ctx); err != nil {
		t.Fatalf("check with only the new key after rekey: %v", err)
	}
	var sealed pg.SealedSecret
	if err := pool.QueryRow(ctx, `SELECT tenant_id, destination_id, key_id, aad_version, ciphertext FROM destination_nats_credentials`).
		Scan(&sealed.TenantID, &sealed.ProviderID, &sealed.KeyID, &sealed.AADVersion, &sealed.Ciphertext); err != nil {
		t.Fatal(err)
	}
	keys, _ := pg.NewKeyring([][]byte{otherKey})
	if got, err := keys.OpenNATS(sealed); err != nil || got != given || sealed.ProviderID != d.ID {
		t.Fatalf("after rekey, with only the new key: %v, credentials given back %v", err, got == given)
	}
	sealed.ProviderID++ // bound to its destination: another's row does not open it
	if _, err := keys.OpenNATS(sealed); err == nil {
		t.Fatal("the credentials open as another destination's")
	}
}
