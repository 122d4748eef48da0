package main

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/testdb"
)

// TestDestinationCreateRedacts: the command line prints the URL redacted
// (review 4, M2), and tells its operator, who runs the service, what a
// refused name resolved to, which the API and the console do not (L3).
func TestDestinationCreateRedacts(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": testdb.NewURL(t), "TIDEMARK_ENCRYPTION_KEY": testEncryptionKey, "USER": "ann"}
	if _, _, err := tidemark(t, env, "", "tenant", "create", "acme"); err != nil {
		t.Fatal(err)
	}
	_, _, err := tidemark(t, env, "", "destination", "create", "--tenant", "acme", "--url", "http://localhost:9/hook?token=S3cr3t")
	if err == nil || !strings.Contains(err.Error(), "url: host localhost resolves to a private or internal address: ") ||
		!strings.Contains(err.Error(), "(localhost resolves to ") || !strings.Contains(err.Error(), "; pass --allow-private") ||
		strings.Contains(err.Error(), "S3cr3t") {
		t.Errorf("create to localhost: %v; want the refusal with the address, and --allow-private", err)
	}
	out, _, err := tidemark(t, env, "", "destination", "create", "--tenant", "acme", "--url", "http://localhost:9/hook?token=S3cr3t",
		"--allow-private")
	if err != nil || !strings.HasPrefix(out, "destination 1: http://localhost:9/hook?<redacted>\n") {
		t.Errorf("create: %v\n%s", err, out)
	}
	out, _, err = tidemark(t, env, "", "destination", "list", "--tenant", "acme")
	if err != nil || !strings.Contains(out, "http://localhost:9/hook?<redacted>") || strings.Contains(out, "S3cr3t") {
		t.Errorf("list: %v\n%s", err, out)
	}
}
