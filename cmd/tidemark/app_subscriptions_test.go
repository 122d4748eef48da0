package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/pull/hubspot/hubspottest"
	"github.com/tidemark/tidemark/internal/testdb"
)

// TestAppSubscriptions runs app subscriptions against hubspottest's
// Webhooks Journal subscriptions (GET, POST and DELETE
// /webhooks-journal/subscriptions/2026-03, as
// https://developers.hubspot.com/docs/api-reference/latest/webhooks-journal/subscriptions/create-subscription
// describes them), with the app's client credentials token: it lists,
// sets from a file (creating, then nothing on a second run, then
// deleting), refuses a bad file naming its line and field, prints
// HubSpot's refusal, and audits each change outside any tenant.
func TestAppSubscriptions(t *testing.T) {
	t.Parallel()
	hs := hubspottest.New(t)
	url := testdb.NewURL(t)
	env := map[string]string{"DATABASE_URL": url, "TIDEMARK_ENCRYPTION_KEY": testEncryptionKey}
	cli := func(args ...string) (string, error) {
		t.Helper()
		out, errOut, err := tidemark(t, env, "", args...)
		return out + errOut, err
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := cli(args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}
	if _, _, err := tidemark(t, env, hs.App().ClientSecret+"\n", "app", "create", "--kind", domain.AppKindHubSpot, "--name", "hub",
		"--app-id", strconv.FormatInt(hs.App().ID, 10), "--client-id", hs.App().ClientID, "--client-secret-stdin",
		"--api-base-url", hs.URL(), "--allow-private"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	both := file("both.json", `[
  {"subscriptionType": "OBJECT", "portalId": 31, "objectTypeId": "0-1",
   "actions": ["CREATE", "UPDATE", "DELETE", "MERGE"], "properties": ["email", "firstname"]},
  {"subscriptionType": "GDPR_PRIVACY_DELETION", "portalId": 31, "objectTypeId": "0-1", "actions": ["GDPR_DELETE"]}
]`)

	if out := must("app", "subscriptions", "--app", "hub"); strings.TrimSpace(out) != "ID  TYPE  OBJECT TYPE  ACTIONS  PROPERTIES  PORTAL" {
		t.Fatalf("an app without subscriptions lists:\n%s", out)
	}
	if out := must("app", "subscriptions", "--app", "hub", "--set", both, "--dry-run"); !strings.Contains(out, "0 unchanged, 2 would create, 0 would delete") {
		t.Fatalf("dry run:\n%s", out)
	}
	out := must("app", "subscriptions", "--app", "hub", "--set", both)
	if !strings.Contains(out, "created 1: OBJECT 0-1 CREATE,UPDATE,DELETE,MERGE email,firstname 31\n") ||
		!strings.Contains(out, "created 2: GDPR_PRIVACY_DELETION 0-1 GDPR_DELETE (all) 31\n") || !strings.Contains(out, "0 unchanged, 2 created, 0 deleted") {
		t.Fatalf("set:\n%s", out)
	}
	if out := must("app", "subscriptions", "--app", "hub", "--set", both); !strings.Contains(out, "2 unchanged, 0 created, 0 deleted") {
		t.Fatalf("a second set changed something:\n%s", out)
	}
	list := must("app", "subscriptions", "--app", "hub")
	if !strings.Contains(list, "1   OBJECT") || !strings.Contains(list, "GDPR_DELETE") || strings.Count(list, "\n") != 3 {
		t.Fatalf("list after the set:\n%s", list)
	}
	one := file("one.json", `[{"subscriptionType": "GDPR_PRIVACY_DELETION", "portalId": 31, "objectTypeId": "0-1", "actions": ["GDPR_DELETE"]}]`)
	if out := must("app", "subscriptions", "--app", "hub", "--set", one); !strings.Contains(out, "deleted 1: OBJECT 0-1") ||
		!strings.Contains(out, "1 unchanged, 0 created, 1 deleted") {
		t.Fatalf("set to one:\n%s", out)
	}

	for _, tc := range []struct {
		name string
		args []string
		want string
		code string
	}{
		{"unknown app", []string{"--app", "nope"}, `app "nope" not found`, domain.ENOTFOUND},
		{"unknown action", []string{"--app", "hub", "--set", file("bad-action.json", "[\n  {\"subscriptionType\": \"OBJECT\", \"portalId\": 31,\n"+
			"   \"objectTypeId\": \"0-1\", \"actions\": []},\n  {\"subscriptionType\": \"OBJECT\", \"objectTypeId\": \"0-2\", \"actions\": [\"CREATE\", \"ERASE\"]}\n]")},
			"line 2: subscription 1: actions is required", domain.EINVALID},
		{"unknown field", []string{"--app", "hub", "--set", file("bad-field.json", `[{"subscriptionType": "OBJECT", "objectType": "contacts"}]`)},
			`line 1: subscription 1: unknown field "objectType"`, domain.EINVALID},
		{"not JSON", []string{"--app", "hub", "--set", file("bad-json.json", "[\n{\"subscriptionType\": }]")}, "line 2: subscription 1 is not JSON", domain.EINVALID},
		{"no portal", []string{"--app", "hub", "--set", file("no-portal.json", `[{"subscriptionType": "OBJECT", "objectTypeId": "0-2", "actions": ["CREATE"]}]`)},
			"line 1: subscription 1: portalId is required for OBJECT subscriptions", domain.EINVALID},
		{"HubSpot refuses", []string{"--app", "hub", "--set", file("no-type.json", `[{"subscriptionType": "GDPR_PRIVACY_DELETION", "portalId": 31, "actions": ["GDPR_DELETE"]}]`)},
			"HubSpot answered 400: VALIDATION_ERROR portalId, objectTypeId and actions are required", ""},
	} {
		out, err := cli(append([]string{"app", "subscriptions"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.code != "" && domain.ErrorCode(err) != tc.code) {
			t.Errorf("%s: %v (code %s)\n%s\nwant %q", tc.name, err, domain.ErrorCode(err), out, tc.want)
		}
		if strings.Contains(out+errString(err), hs.App().ClientSecret) {
			t.Errorf("%s: the client secret was printed", tc.name)
		}
	}

	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT summary FROM audit_log WHERE action = 'app_subscriptions' AND tenant_id = 0 AND target = 'hub' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	summaries, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(summaries) != 2 || !strings.HasPrefix(summaries[0], "journal subscriptions: 2 created, 0 deleted") ||
		!strings.HasPrefix(summaries[1], "journal subscriptions: 0 created, 1 deleted, 1 unchanged: -1 OBJECT") {
		t.Fatalf("audited %q, %v; want the two sets that changed something", summaries, err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
