package conflicts_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/pull/hubspot/hubspottest"
	"github.com/tidemark/tidemark/postgres"
	"github.com/tidemark/tidemark/web/internal/webtest"
)

// Asking HubSpot for a snapshot from the conflict page, against
// hubspottest's CRM snapshots (POST /webhooks-journal/snapshots/2026-03/crm,
// https://developers.hubspot.com/docs/api-reference/latest/webhooks-journal/snapshots/guide.md),
// which append the SNAPSHOT entry to the portal's journal.

const snapshotPortal = 31

// hubConflict installs portal 31 of a HubSpot app by OAuth for acme's
// provider "hub" and makes a revision conflict of its contact 501: two
// events of one instant naming firstname differently.
func hubConflict(t *testing.T, e *webtest.Env, hs *hubspottest.Server) int64 {
	t.Helper()
	ctx := webtest.CliContext()
	app, err := e.Store.CreateApp(ctx, domain.NewApp{Kind: domain.AppKindHubSpot, Name: "hub-app", ProviderAppID: hs.App().ID,
		ClientID: hs.App().ClientID, ClientSecret: hs.App().ClientSecret, APIBaseURL: hs.URL(), AuthorizeURL: hs.AuthorizeURL(), AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	k, err := provider.Get(app.Kind)
	if err != nil {
		t.Fatal(err)
	}
	secret, config, err := k.Setup("", nil)
	if err != nil {
		t.Fatal(err)
	}
	access, refresh := hs.InstallTokens(snapshotPortal)
	if _, err := e.Store.InstallByOAuth(ctx, domain.AppOAuthInstall{AppID: app.ID, TenantID: e.Tenant("acme").ID, PortalID: snapshotPortal,
		ProviderName: "hub", NewSecret: secret, NewConfig: config,
		Tokens: domain.AppTokens{AccessToken: access, RefreshToken: refresh, Expiry: time.Now().Add(30 * time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Minute)
	for i, name := range []string{"Ada", "Grace"} {
		uri := e.Srv.URL + "/webhooks/apps/hub-app"
		body, h := hs.AppBatch(uri, time.Now(), hubspottest.V3Event{EventID: int64(i + 1), SubscriptionID: 7, PortalID: snapshotPortal,
			OccurredAt: at, SubscriptionType: "contact.propertyChange", ObjectID: 501, PropertyName: "firstname", PropertyValue: name})
		req, _ := http.NewRequest(http.MethodPost, uri, bytes.NewReader(body))
		req.Header = h
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("app batch %d: %v %v", i, resp, err)
		}
		resp.Body.Close()
	}
	var id int64
	if err := e.Store.Pool().QueryRow(context.Background(), `SELECT id FROM conflicts WHERE object_id = '501'`).Scan(&id); err != nil {
		t.Fatalf("no conflict of contact 501: %v", err)
	}
	return id
}

// TestAskSnapshot: an operator sees the button on a conflict of a portal
// installed by OAuth (a viewer does not); it asks HubSpot, whose journal
// gains the record's SNAPSHOT entry for the disputed property, audits the
// request and says so. HubSpot refusing (its refresh token revoked) says
// so and records nothing, and the button is gone once the install needs
// reconnecting.
func TestAskSnapshot(t *testing.T) {
	t.Parallel()
	e, logs := webtest.SetupLogged(t, postgres.DefaultReadTimeout)
	hs := hubspottest.New(t)
	id := hubConflict(t, e, hs)
	page := fmt.Sprintf("/t/acme/conflicts/%d", id)
	button := "form[action='" + page + "/snapshot'] button"

	e.Member("viewer@example.com", false, domain.RoleViewer, "acme")
	if _, doc := e.SignIn("viewer@example.com").Get(page); doc.Find(button).Length() != 0 {
		t.Error("a viewer sees the snapshot button")
	}
	e.Member("ops@example.com", false, domain.RoleOperator, "acme")
	b := e.SignIn("ops@example.com")
	if status, doc := b.Get(page); status != http.StatusOK || doc.Find(button).Length() != 1 {
		t.Fatalf("the operator's conflict page (%d) has no snapshot button", status)
	}
	status, doc0, loc := b.Post(page+"/snapshot", nil)
	if status != http.StatusSeeOther || loc != page {
		t.Fatalf("ask: %d to %q: %s\n%s", status, loc, webtest.Text(doc0, "main"), logs)
	}
	_, doc := b.Get(loc)
	if got := webtest.ShownFlash(doc); got != "Asked HubSpot for a snapshot of contact 501; it arrives through the journal and settles the conflict if newer." {
		t.Errorf("flash %q", got)
	}
	journal := hs.Journal(snapshotPortal)
	if len(journal) != 1 || journal[0].Action != "SNAPSHOT" || journal[0].ObjectID != 501 || journal[0].ObjectTypeID != "0-1" {
		t.Fatalf("the portal's journal %+v, want contact 501's SNAPSHOT", journal)
	}
	asked := 0
	for _, line := range e.AuditLog("acme") {
		if strings.Contains(line, "ops@example.com "+domain.AuditConflictSnapshotRequested+" conflict "+strconv.FormatInt(id, 10)+" (hub contact ") &&
			strings.Contains(line, "status id ") {
			asked++
		}
	}
	if asked != 1 {
		t.Errorf("audited %d requests, want 1:\n%s", asked, strings.Join(e.AuditLog("acme"), "\n"))
	}

	// HubSpot refuses the install's tokens: nothing asked, nothing recorded.
	hs.Uninstall(snapshotPortal)
	hs.ExpireAccessTokens()
	status, _, loc = b.Post(page+"/snapshot", nil)
	if status != http.StatusSeeOther || loc != page {
		t.Fatalf("ask after the uninstall: %d to %q", status, loc)
	}
	_, doc = b.Get(loc)
	if got := webtest.ShownFlash(doc); !strings.HasPrefix(got, "No snapshot was asked for: HubSpot did not take the request") {
		t.Errorf("flash after a refusal %q", got)
	}
	if n := len(hs.Journal(snapshotPortal)); n != 1 {
		t.Errorf("the journal holds %d entries after a refusal", n)
	}
	if n := strings.Count(strings.Join(e.AuditLog("acme"), "\n"), domain.AuditConflictSnapshotRequested); n != 1 {
		t.Errorf("%d requests audited after a refusal, want 1", n)
	}
	if doc.Find(button).Length() != 0 {
		t.Error("the button is still shown for an install that needs reconnecting")
	}
}

// TestAskSnapshotWithoutInstall: a conflict of a provider that receives
// no app's portal has no button, and its POST is a 409 saying why.
func TestAskSnapshotWithoutInstall(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	id := e.ConflictOf("c-1", 5, `{"name":"Ada"}`, `{"name":"Ada L."}`)
	b := e.Operator("ops@example.com", false, "acme")
	page := fmt.Sprintf("/t/acme/conflicts/%d", id)
	if _, doc := b.Get(page); doc.Find("form[action$='/snapshot']").Length() != 0 {
		t.Error("a conflict of a hand-made provider shows the snapshot button")
	}
	status, doc, _ := b.Post(page+"/snapshot", nil)
	if status != http.StatusConflict || !strings.Contains(doc.Text(), "provider crm receives no portal of a HubSpot app") {
		t.Fatalf("ask without an install: %d %q", status, webtest.Text(doc, "main"))
	}
	if n := strings.Count(strings.Join(e.AuditLog("acme"), "\n"), domain.AuditConflictSnapshotRequested); n != 0 {
		t.Errorf("%d requests audited without an install", n)
	}
}
