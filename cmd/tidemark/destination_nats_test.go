package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"

	"github.com/tidemark/tidemark/internal/testdb"
)

// TestNATSDestinationCredentialFlags: a NATS destination needs
// --nats-creds or --nats-nkey (review 4's M6) unless --allow-private, for a
// server inside the operator's network; the files' contents are stored
// encrypted, never printed, and secrets rekey re-encrypts them.
func TestNATSDestinationCredentialFlags(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": testdb.NewURL(t), "TIDEMARK_ENCRYPTION_KEY": firstKey}
	if _, _, err := tidemark(t, env, "", "tenant", "create", "acme"); err != nil {
		t.Fatal(err)
	}
	user, _ := nkeys.CreateUser()
	seed, _ := user.Seed()
	dir := t.TempDir()
	seedFile, notSeed := filepath.Join(dir, "user.nk"), filepath.Join(dir, "account.nk")
	os.WriteFile(seedFile, append(seed, '\n'), 0o600)
	account, _ := nkeys.CreateAccount()
	accountSeed, _ := account.Seed()
	os.WriteFile(notSeed, accountSeed, 0o600)

	create := []string{"destination", "create", "--tenant", "acme", "--nats", "nats://203.0.113.11:4222", "--subject", "crm"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--nats needs credentials for the server: --nats-creds FILE or --nats-nkey FILE"},
		{[]string{"--nats-nkey", filepath.Join(dir, "missing.nk")}, "--nats-nkey: open"},
		{[]string{"--nats-nkey", notSeed}, "nats_nkey is not a user nkey seed"},
		{[]string{"--nats-nkey", seedFile, "--nats-creds", seedFile}, "give nats_creds or nats_nkey, not both"},
	} {
		out, _, err := tidemark(t, env, "", append(create, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), string(seed)) || out != "" {
			t.Errorf("create %v: %v, %q; want a refusal with %q", tc.args, err, out, tc.want)
		}
	}
	if _, _, err := tidemark(t, env, "", "destination", "create", "--tenant", "acme", "--url", "https://203.0.113.5/",
		"--nats-nkey", seedFile); err == nil || !strings.Contains(err.Error(), "--nats-nkey goes with --nats") {
		t.Errorf("--nats-nkey with --url: %v", err)
	}
	out, _, err := tidemark(t, env, "", append(create, "--nats-nkey", seedFile)...)
	if err != nil || !strings.HasPrefix(out, "destination 1: nats://203.0.113.11:4222 crm.>\n") || strings.Contains(out, string(seed)) {
		t.Fatalf("create --nats-nkey: %v\n%s", err, out)
	}
	rotated := map[string]string{"DATABASE_URL": env["DATABASE_URL"], "TIDEMARK_ENCRYPTION_KEY": secondKey + "," + firstKey}
	if out, _, err := tidemark(t, rotated, "", "secrets", "rekey"); err != nil || !strings.Contains(out, "re-encrypted 1 NATS destination credentials") {
		t.Fatalf("rekey: %v\n%s", err, out)
	}
}
