package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/internal/pull/hubspot/hubspottest"
	"github.com/tidemark/tidemark/internal/testdb"
)

// What the README's "Connect a HubSpot app" leaves for its reader to fill
// in: the public URL, the app's ids (its secret comes from the
// environment), and the portal HubSpot's consent page installs.
const (
	readmeAppPublic   = "https://hooks.example.com"
	readmeAppID       = "4242001"
	readmeAppClientID = "5f6e7d8c-1a2b-4c3d-9e8f-0a1b2c3d4e5f"
	readmeAppPortal   = 62515
	readmeAppAdmin    = "admin@example.com"
)

// readmeSection returns the README's section under "## heading".
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q section", "## "+heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// tourStep is a code block of commands and, when the README shows it, the
// block of what they print.
type tourStep struct{ commands, printed string }

// tourSteps pairs each block of commands with the block after it that is
// not commands.
func tourSteps(blocks []string) []tourStep {
	var steps []tourStep
	for _, b := range blocks {
		first := strings.Fields(b)[0]
		if slices.Contains([]string{"tidemark", "printf", "cat", "curl"}, first) || strings.Contains(first, "=$(") || len(steps) == 0 {
			steps = append(steps, tourStep{commands: b})
			continue
		}
		steps[len(steps)-1].printed = b
	}
	return steps
}

var printedTime = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ`)

// printedLines is output as a reader compares it: each line's columns
// single-spaced and its times any time.
func printedLines(s string) string {
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		lines = append(lines, strings.Join(strings.Fields(printedTime.ReplaceAllString(line, "TIME")), " "))
	}
	return strings.Join(lines, "\n")
}

// quoted is the README's first inline code matching re (its first group),
// its line breaks and indentation collapsed.
func quoted(t *testing.T, section, re string) string {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(section)
	if m == nil {
		t.Fatalf("the section quotes nothing matching %s", re)
	}
	return strings.Join(strings.Fields(m[1]), " ")
}

// TestReadmeAppTour walks the README's "Connect a HubSpot app" against
// hubspottest's fake HubSpot (its OAuth consent, token and token-info
// endpoints, journal subscriptions, Webhooks Journal and signed v3 batches,
// as the fake's files cite HubSpot's documentation for each), a fresh
// database and a real serve: each code block runs literally in bash with
// only the reader's values filled in (the public URL, the app's ids and
// secret, and the fake's URLs appended to app create as a sandbox's), the
// owner's "Connect HubSpot" is followed over HTTP through the fake's
// consent page, and each step prints what the README shows.
func TestReadmeAppTour(t *testing.T) {
	e2e.Require(t, "the go command, bash and curl (the test builds tidemark and walks the README's HubSpot app section)")
	t.Parallel()
	section := readmeSection(t, "Connect a HubSpot app")
	steps := tourSteps(codeBlocks(section))
	if len(steps) != 5 {
		t.Fatalf("the section has %d steps, want app create, app installs, app subscriptions, app connect and the admin API", len(steps))
	}
	hs := hubspottest.New(t)
	hs.SetConsentPortal(readmeAppPortal)
	fake := hs.App()
	// A change the webhooks never brought, for the journal to find.
	name := "Ada"
	hs.AppendEntry(readmeAppPortal, hubspottest.Entry{ObjectTypeID: "0-1", ObjectID: 5001, Action: "CREATE",
		OccurredAt: time.Now().Add(-time.Minute).UnixMilli(), Properties: map[string]*string{"firstname": &name}})

	dbURL := testdb.NewURL(t)
	exe := buildTidemark(t)
	dir := t.TempDir()
	// serve's address is chosen first: the public URL is in what the
	// commands print and in the OAuth redirect URL.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	base := "http://" + addr
	env := append(serverEnv(dbURL, testEncryptionKey), "HUBSPOT_CLIENT_SECRET="+fake.ClientSecret,
		"PATH="+filepath.Dir(exe)+string(os.PathListSeparator)+os.Getenv("PATH"))
	fill := strings.NewReplacer(readmeAppPublic, base, readmeAppID, strconv.FormatInt(fake.ID, 10), readmeAppClientID, fake.ClientID)
	printed := strings.NewReplacer(readmeAppPublic, base, readmeAppID, strconv.FormatInt(fake.ID, 10), readmeAppClientID, fake.ClientID,
		domain.DefaultHubSpotAuthorizeURL, hs.AuthorizeURL(), domain.DefaultHubSpotAPIBaseURL, hs.URL())
	var all strings.Builder
	// shell runs script and returns what it printed on standard output
	// (curl's progress meter, on a terminal not shown, goes to stderr).
	shell := func(script, stdin string) string {
		t.Helper()
		cmd := exec.Command("bash", "-eo", "pipefail", "-c", script)
		var stderr strings.Builder
		cmd.Dir, cmd.Env, cmd.Stdin, cmd.Stderr = dir, env, strings.NewReader(stdin), &stderr
		got, err := cmd.Output()
		all.WriteString(string(got) + stderr.String())
		if err != nil {
			t.Fatalf("%s\n%v:\n%s%s", script, err, got, stderr.String())
		}
		return string(got)
	}

	// What "Against your own PostgreSQL" made, the owner the section
	// names, and an admin for the admin token.
	const password = "correct horse battery staple"
	shell("tidemark tenant create acme --name 'Acme Inc'", "")
	shell(quoted(t, section, "`(tidemark user create [^`]+)`"), password+"\n")
	shell("tidemark user create --email "+readmeAppAdmin+" --password-stdin --admin", password+"\n")
	srv := startChildIn(t, dir, exe, env, listening, "serve", "--addr", addr, "--public-url", base,
		"--metrics-addr", "127.0.0.1:0", "--journal-interval", "500ms")

	for i, step := range steps {
		commands := fill.Replace(step.commands)
		switch {
		case strings.Contains(commands, "tidemark app create"):
			commands += " --authorize-url " + hs.AuthorizeURL() + " --api-base-url " + hs.URL() + " --allow-private"
		case strings.Contains(commands, "tidemark app installs"):
			readmeInstall(t, section, base, hs, fill)
		case strings.Contains(commands, "curl"):
			webhookURL := fill.Replace(lastLine(steps[0].printed))
			readmeAppBatch(t, hs, webhookURL)
			readmeAdminAPI(t, section, webhookURL, shell(commands, ""))
			continue
		}
		got := shell(commands, "")
		if step.printed == "" {
			t.Fatalf("step %d shows no output:\n%s", i+1, step.commands)
		}
		if want := printed.Replace(step.printed); printedLines(got) != printedLines(want) {
			t.Errorf("step %d printed another result than the README's:\n%s\ngot:\n%s\nwant:\n%s", i+1, step.commands, got, want)
		}
	}

	// The journal reader finds the change the webhooks missed and says so.
	missed := quoted(t, section, "`(journal:\\s+a\\s+page\\s+found\\s+changes[^`]*)`")
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(srv.stderr.String(), missed); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve never logged %q:\n%s", missed, srv.stderr.String())
		}
	}
	if logs := srv.stderr.String(); strings.Contains(logs, "level=ERROR") {
		t.Errorf("serve logged errors during the section:\n%s", logs)
	}
	if strings.Contains(all.String(), fake.ClientSecret) {
		t.Error("a command printed the client secret")
	}
}

// readmeInstall is the owner's "Connect HubSpot" of the section: signed in,
// the Providers page offers the button the README names, its connect
// redirects to HubSpot's consent page, which sends the browser to the
// redirect URL the README names, and the provider's page says what the
// README quotes.
func readmeInstall(t *testing.T, section, base string, hs *hubspottest.Server, fill *strings.Replacer) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	redirect := func(u string) (int, string) {
		t.Helper()
		resp, err := browser.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Location")
	}
	owner := regexp.MustCompile(`--email (\S+)`).FindStringSubmatch(quoted(t, section, "`(tidemark user create [^`]+)`"))
	resp, err := browser.PostForm(base+"/login", url.Values{"email": {owner[1]}, "password": {"correct horse battery staple"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in of %s answered %d", owner[1], resp.StatusCode)
	}
	button := quoted(t, section, `\*\*(Connect\s+HubSpot\s+with\s+app\s+[^*]+)\*\*`)
	if page := getPage(t, browser, base+"/t/acme/providers"); !strings.Contains(page, button) {
		t.Fatalf("the Providers page has no %q", button)
	}
	status, consent := redirect(base + "/t/acme/apps/hub/connect?provider=" + domain.DefaultAppProvider)
	if status != http.StatusFound || !strings.HasPrefix(consent, hs.AuthorizeURL()+"?") {
		t.Fatalf("Connect HubSpot answered %d to %q, want HubSpot's consent page", status, consent)
	}
	callback := fill.Replace(quoted(t, section, "redirect URL\\s+there is `([^`]+)`"))
	status, back := redirect(consent)
	if status != http.StatusFound || !strings.HasPrefix(back, callback+"?") {
		t.Fatalf("the consent page answered %d to %q, want the redirect URL %s", status, back, callback)
	}
	status, landing := redirect(back)
	if status != http.StatusSeeOther || landing != "/t/acme/providers/"+domain.DefaultAppProvider {
		t.Fatalf("the callback answered %d to %q, want the provider's page", status, landing)
	}
	flash := quoted(t, section, "`(HubSpot\\s+portal [^`]+)`")
	if page := getPage(t, browser, base+landing); !strings.Contains(page, flash) {
		t.Fatalf("the provider's page does not say %q", flash)
	}
}

// readmeAppBatch posts HubSpot's batch to the app's webhook URL: an event
// for the portal mapped by hand (routed) and one for a portal installed
// for no tenant (unrouted).
func readmeAppBatch(t *testing.T, hs *hubspottest.Server, webhookURL string) {
	t.Helper()
	now := time.Now()
	body, header := hs.AppBatch(webhookURL, now,
		hubspottest.V3Event{EventID: 1, PortalID: 70117, OccurredAt: now, SubscriptionType: "contact.creation", ObjectID: 7},
		hubspottest.V3Event{EventID: 2, PortalID: 99, OccurredAt: now, SubscriptionType: "contact.creation", ObjectID: 8})
	req, err := http.NewRequest(http.MethodPost, webhookURL, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct{ Routed, Unrouted int }
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || resp.StatusCode != http.StatusOK || answer.Routed != 1 || answer.Unrouted != 1 {
		t.Fatalf("the app's webhook URL answered %d %+v (%v), want 200 with one event routed and one unrouted", resp.StatusCode, answer, err)
	}
}

// readmeAdminAPI checks the admin API's answer (got) as the section
// describes it: the app's webhook URL, the OAuth install with tokens, the
// one mapped by hand without, and the portal installed for no tenant.
func readmeAdminAPI(t *testing.T, section, webhookURL, got string) {
	t.Helper()
	for _, says := range []string{"`webhook_url`", "`installs`", `"tokens": true`, `"tokens": false`, "`unrouted`", "answered 200 and applied nowhere"} {
		if !strings.Contains(strings.Join(strings.Fields(section), " "), says) {
			t.Errorf("the section does not say %s", says)
		}
	}
	var app struct {
		WebhookURL string `json:"webhook_url"`
		Installs   []struct {
			PortalID         int64 `json:"portal_id"`
			Tenant, Provider string
			Tokens           bool
			Status           string
		}
		Unrouted []struct {
			PortalID int64 `json:"portal_id"`
			Count    int
		}
	}
	if err := json.Unmarshal([]byte(got), &app); err != nil {
		t.Fatalf("the admin API answered %v:\n%s", err, got)
	}
	if app.WebhookURL != webhookURL || len(app.Installs) != 2 ||
		app.Installs[0].PortalID != readmeAppPortal || app.Installs[0].Tenant != "acme" || app.Installs[0].Provider != domain.DefaultAppProvider ||
		!app.Installs[0].Tokens || app.Installs[0].Status != string(domain.InstallActive) ||
		app.Installs[1].PortalID != 70117 || app.Installs[1].Provider != "hs-emea" || app.Installs[1].Tokens ||
		len(app.Unrouted) != 1 || app.Unrouted[0].PortalID != 99 || app.Unrouted[0].Count != 1 {
		t.Fatalf("the admin API's app is not the section's:\n%s", got)
	}
}
