package main

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/testdb"
)

// TestAppCommands: app create reads the client secret from standard input,
// never prints it, and prints the webhook URL last; its refusals exit 2
// (EINVALID) and store nothing; list, rotate, connect (creating the
// tenant's HubSpot provider), installs, a portal of another tenant refused
// naming it, disconnect and delete, as an admin runs them.
func TestAppCommands(t *testing.T) {
	t.Parallel()
	url := testdb.NewURL(t)
	env := map[string]string{"DATABASE_URL": url, "TIDEMARK_ENCRYPTION_KEY": testEncryptionKey,
		"TIDEMARK_PUBLIC_URL": "https://hooks.example.com/"}
	const secret, next = "5b1c2d3e-4a5b-6c7d-8e9f-0a1b2c3d4e5f", "6c2d3e4f-5a6b-7c8d-9e0f-1a2b3c4d5e6f"
	var printed strings.Builder
	cli := func(stdin string, args ...string) (string, error) {
		t.Helper()
		out, errOut, err := tidemark(t, env, stdin, args...)
		printed.WriteString(out + errOut)
		return out, err
	}
	must := func(stdin string, args ...string) string {
		t.Helper()
		out, err := cli(stdin, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out
	}
	for _, slug := range []string{"acme", "globex"} {
		must("", "tenant", "create", slug)
	}
	must("", "provider", "create", "--tenant", "acme", "--name", "crm", "--kind", "standard")

	create := []string{"app", "create", "--kind", domain.AppKindHubSpot, "--name", "tidemark", "--app-id", "4242", "--client-id", "cid-1",
		"--client-secret-stdin", "--scopes", "oauth,crm.objects.contacts.read"}
	for _, tc := range []struct {
		name, stdin string
		args        []string
		want        string
		invalid     bool // exits 2
	}{
		{"no secret on stdin", "", create, "no client secret on standard input", false},
		{"a short secret", "short\n", create, "the client secret must be one line", true},
		{"an unknown kind", secret, append(append([]string{}, create[:3]...), append([]string{"zendesk"}, create[4:]...)...), `app kind "zendesk" is not known`, true},
		{"a bad name", secret, append(append([]string{}, create[:5]...), append([]string{"Tide Mark"}, create[6:]...)...), `app "Tide Mark" must be`, true},
		{"an http URL", secret, append(create, "--api-base-url", "http://203.0.113.5"), "the API base URL must use https", true},
		{"a loopback URL", secret, append(create, "--authorize-url", "https://127.0.0.1:8443/oauth"), "authorize URL: host 127.0.0.1 is a loopback address", true},
		{"a private URL's hint", secret, append(create, "--api-base-url", "https://10.0.0.8"), "pass --allow-private", true},
	} {
		_, err := cli(tc.stdin, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || (domain.ErrorCode(err) == domain.EINVALID) != tc.invalid {
			t.Errorf("%s: %v (code %s), want %q, exit 2: %t", tc.name, err, domain.ErrorCode(err), tc.want, tc.invalid)
		}
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var apps int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM apps`).Scan(&apps); err != nil || apps != 0 {
		t.Fatalf("%d apps stored by refusals (%v)", apps, err)
	}

	out := must(secret+"\n", create...)
	if lastLine(out) != "https://hooks.example.com/webhooks/apps/tidemark" {
		t.Fatalf("app create's last line: %q, want the app's webhook URL\n%s", lastLine(out), out)
	}
	if !strings.Contains(out, "created hubspot app tidemark (app id 4242, client id cid-1)\nscopes: crm.objects.contacts.read oauth\n"+
		"authorize URL: https://app.hubspot.com/oauth/authorize\nAPI base URL: https://api.hubapi.com\n") {
		t.Fatalf("app create printed:\n%s", out)
	}
	if _, err := cli(secret, create...); err == nil || !strings.Contains(err.Error(), `an app named "tidemark" exists already`) ||
		domain.ErrorCode(err) == domain.EINVALID {
		t.Fatalf("a second app named tidemark: %v, want a conflict that exits 1", err)
	}
	sandbox := must(secret, "app", "create", "--kind", domain.AppKindHubSpot, "--name", "sandbox", "--app-id", "7", "--client-id", "cid-2",
		"--client-secret-stdin", "--authorize-url", "http://127.0.0.1:9/oauth/authorize", "--api-base-url", "http://127.0.0.1:9",
		"--allow-private", "--public-url", "http://127.0.0.1:8080")
	if lastLine(sandbox) != "http://127.0.0.1:8080/webhooks/apps/sandbox" {
		t.Fatalf("sandbox app: %s", sandbox)
	}

	list := strings.Split(strings.TrimSpace(must("", "app", "list")), "\n")
	if len(list) != 3 || !strings.HasPrefix(list[0], "NAME") || !strings.HasPrefix(list[1], "sandbox ") ||
		!strings.HasPrefix(list[2], "tidemark ") || !strings.Contains(list[2], "4242") || !strings.HasSuffix(list[2], "never") {
		t.Fatalf("app list:\n%s", strings.Join(list, "\n"))
	}
	if out := must(next, "app", "rotate", "--name", "tidemark", "--client-secret-stdin"); out !=
		"rotated the client secret of app tidemark; the previous one verifies for 24h more\n" {
		t.Fatalf("app rotate: %q", out)
	}
	if _, err := cli(next, "app", "rotate", "--name", "nothing", "--client-secret-stdin"); err == nil || !strings.Contains(err.Error(), `app "nothing" not found`) {
		t.Fatalf("rotate an unknown app: %v", err)
	}

	out = must("", "app", "connect", "--app", "tidemark", "--tenant", "acme", "--portal-id", "1001")
	if out != "created hubspot provider hubspot for tenant acme\nportal 1001 of app tidemark goes to tenant acme, provider hubspot (no tokens: webhooks only)\n" {
		t.Fatalf("app connect:\n%s", out)
	}
	if out := must("", "app", "connect", "--app", "tidemark", "--tenant", "acme", "--portal-id", "1001"); strings.Contains(out, "created") {
		t.Fatalf("connect again should create nothing:\n%s", out)
	}
	_, err = cli("", "app", "connect", "--app", "tidemark", "--tenant", "globex", "--portal-id", "1001")
	if err == nil || !strings.Contains(err.Error(), "portal 1001 of app tidemark is installed for tenant acme (provider hubspot)") {
		t.Fatalf("acme's portal for globex: %v, want a refusal naming acme", err)
	}
	if _, err := cli("", "app", "connect", "--app", "tidemark", "--tenant", "acme", "--provider", "crm", "--portal-id", "3003"); domain.ErrorCode(err) != domain.EINVALID {
		t.Fatalf("a standard provider: %v, want exit 2", err)
	}
	must("", "app", "connect", "--app", "tidemark", "--tenant", "globex", "--provider", "hub", "--portal-id", "2002")
	installs := strings.Split(strings.TrimSpace(must("", "app", "installs", "--app", "tidemark")), "\n")
	if len(installs) != 3 || !strings.HasPrefix(installs[0], "PORTAL") ||
		strings.Join(strings.Fields(installs[1])[:6], " ") != "1001 acme hubspot active no (webhooks" ||
		strings.Join(strings.Fields(installs[2])[:3], " ") != "2002 globex hub" {
		t.Fatalf("app installs:\n%s", strings.Join(installs, "\n"))
	}

	if out := must("", "app", "disconnect", "--app", "tidemark", "--portal-id", "1001"); out !=
		"portal 1001 of app tidemark disconnected from tenant acme; its provider and records are kept\n" {
		t.Fatalf("app disconnect: %q", out)
	}
	if _, err := cli("", "app", "delete", "--name", "tidemark"); err == nil || !strings.Contains(err.Error(), "--confirm") {
		t.Fatalf("delete without --confirm: %v", err)
	}
	if out := must("", "app", "delete", "--name", "tidemark", "--confirm"); out != "deleted app tidemark with its secrets and installs\n" {
		t.Fatalf("app delete: %q", out)
	}
	if list := must("", "app", "list"); strings.Contains(list, "tidemark") {
		t.Fatalf("app list after delete:\n%s", list)
	}
	for _, s := range []string{secret, next} {
		if strings.Contains(printed.String(), s) {
			t.Fatal("a client secret was printed")
		}
	}
}
