package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/internal/pull/salesforce/pubsub/pubsubtest"
	"github.com/tidemark/tidemark/internal/pull/salesforce/salesforcetest"
	"github.com/tidemark/tidemark/internal/testdb"
)

// What the README's "Salesforce Change Data Capture" leaves for its reader
// to fill in.
const (
	readmeSFClientID = "3MVG9abcdefghijk"
	readmeSFLogin    = "https://acme.my.salesforce.com"
	readmeSFOrg      = "00D5e000000AbCdEAK"
)

// TestReadmeCDC runs the README's "Salesforce Change Data Capture" against
// salesforcetest's fake org and pubsubtest's fake Pub/Sub API: each block
// runs in bash with the reader's values filled in (the fakes' URLs given as
// a sandbox's, with --allow-private) and prints what the README shows; a
// serve then subscribes and writes a change event the fake publishes.
func TestReadmeCDC(t *testing.T) {
	e2e.Require(t, "the go command and bash (the test builds tidemark and runs the README's CDC section)")
	t.Parallel()
	section := readmeSection(t, "Salesforce Change Data Capture")
	steps := tourSteps(codeBlocks(section))
	if len(steps) != 2 {
		t.Fatalf("the section has %d steps, want the connected app's credentials and --cdc", len(steps))
	}
	sf := salesforcetest.New(t)
	fake := pubsubtest.New(t, time.Second)
	fake.AcceptIssued(sf.Tokens, sf.URL, readmeSFOrg)
	dbURL := testdb.NewURL(t)
	exe := buildTidemark(t)
	dir := t.TempDir()
	env := append(serverEnv(dbURL, testEncryptionKey), "SF_CLIENT_SECRET="+sf.ClientSecret,
		"PATH="+filepath.Dir(exe)+string(os.PathListSeparator)+os.Getenv("PATH"))
	fill := strings.NewReplacer(readmeSFClientID, sf.ClientID, readmeSFLogin, sf.URL)
	printed := strings.NewReplacer(readmeSFClientID, sf.ClientID, readmeSFLogin, sf.URL,
		"API version v62.0;", "API version v62.0; private addresses allowed;", "api.pubsub.salesforce.com:7443", fake.Addr())
	shell := bashIn(t, dir, env, sf.ClientSecret)
	shell("tidemark tenant create acme && tidemark provider create --tenant acme --name sf --kind salesforce --org-id " + readmeSFOrg)
	for i, step := range steps {
		commands := fill.Replace(step.commands)
		if strings.Contains(commands, "--cdc") {
			commands += " --pubsub-url " + fake.Addr() + " --allow-private" // a sandbox's, as the flag's usage says
		} else {
			commands += " --allow-private"
		}
		got := shell(commands)
		if want := printed.Replace(step.printed); printedLines(got) != printedLines(want) {
			t.Errorf("step %d printed another result than the README's:\n%s\ngot:\n%s\nwant:\n%s", i+1, step.commands, got, want)
		}
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	srv := startChildIn(t, dir, exe, env, listening, "serve", "--addr", addr, "--metrics-addr", "127.0.0.1:0",
		"--cdc-interval", "200ms")
	pool := checkerPool(t, dbURL)
	for deadline := time.Now().Add(30 * time.Second); fake.Counts().Subscribes == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not subscribe within 30 s:\n%s", tailLines(srv.stderr.String(), 20))
		}
	}
	fake.AddChange(pubsubtest.Change{Entity: "Contact", Type: "CREATE", RecordIDs: []string{"003README"}, Commit: time.Now(),
		Fields: map[string]any{"Name.LastName": "Lovelace"}})
	for deadline := time.Now().Add(30 * time.Second); queryInt(t, pool, `SELECT count(*) FROM records WHERE object_id = '003README'`) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the change event was not written within 30 s:\n%s", tailLines(srv.stderr.String(), 20))
		}
	}
}
