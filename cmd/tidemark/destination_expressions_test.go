package main

import (
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
)

// TestDestinationExpressionCommands: --filter and --transform at creation
// and with destination update, shown by destination list; an expression
// that does not compile is refused as the user's to fix (exit status 2)
// with CEL's line and column, and changes nothing.
func TestDestinationExpressionCommands(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": testdb.NewURL(t), "TIDEMARK_ENCRYPTION_KEY": testEncryptionKey, "USER": "ann"}
	if _, _, err := tidemark(t, env, "", "tenant", "create", "acme"); err != nil {
		t.Fatal(err)
	}
	create := []string{"destination", "create", "--tenant", "acme", "--url", "http://127.0.0.1:9/hook", "--allow-private"}
	_, _, err := tidemark(t, env, "", append(create, "--filter", "change.type ==")...)
	if domain.ErrorCode(err) != domain.EINVALID || !strings.HasPrefix(err.Error(), "filter: ERROR:1:15: Syntax error:") {
		t.Fatalf("create with a bad filter: %v; want exit status 2 and CEL's message", err)
	}
	if _, _, err := tidemark(t, env, "", append(create, "--filter", `"lifecyclestage" in change.changed`)...); err != nil {
		t.Fatal(err)
	}

	update := []string{"destination", "update", "--tenant", "acme", "--id", "1"}
	_, _, err = tidemark(t, env, "", append(update, "--transform", `{"email": change.snapshot.email`)...)
	if domain.ErrorCode(err) != domain.EINVALID || !strings.HasPrefix(err.Error(), "transform: ERROR:1:") {
		t.Fatalf("update with a bad transform: %v", err)
	}
	for _, args := range [][]string{{}, {"--filter", "true", "--no-filter"}} {
		if _, _, err := tidemark(t, env, "", append(update, args...)...); err == nil || !strings.Contains(err.Error(), "one of --filter") {
			t.Errorf("update %v: %v; want the usage", args, err)
		}
	}
	out, _, err := tidemark(t, env, "", append(update, "--no-filter", "--transform", `{"email": change.snapshot.email}`)...)
	if err != nil || out != "destination 1: filter none, transform \"{\\\"email\\\": change.snapshot.email}\"\n" {
		t.Fatalf("update: %v %q", err, out)
	}
	out, _, err = tidemark(t, env, "", "destination", "list", "--tenant", "acme")
	if err != nil || !strings.Contains(out, `types=record.* transform="{\"email\": change.snapshot.email}"`) || strings.Contains(out, "filter=") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	if _, _, err := tidemark(t, env, "", "destination", "update", "--tenant", "acme", "--id", "9", "--no-filter"); domain.ErrorCode(err) != domain.ENOTFOUND {
		t.Errorf("update of no destination: %v", err)
	}
}
