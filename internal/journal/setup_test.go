package journal_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/internal/journal"
	"github.com/tidemark/tidemark/internal/provider"
	"github.com/tidemark/tidemark/internal/pull/hubspot/hubspottest"
	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres"
)

// portal is the portal the fixture installs.
const portal = 62515

// fixture is a store on a fresh database with tenant acme, HubSpot's fake
// and an app installed by OAuth for acme's provider hubspot in portal,
// with tokens the fake issued.
type fixture struct {
	store   *postgres.Store
	ctx     context.Context
	hs      *hubspottest.Server
	tenant  domain.Tenant
	app     domain.App
	install domain.AppInstall
}

func setup(t *testing.T) fixture {
	t.Helper()
	store, err := postgres.New(testdb.New(t), []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := domain.WithActor(context.Background(), domain.Actor{Kind: domain.ActorCLI, Name: "test"})
	tenant, err := store.CreateTenant(ctx, "acme", "")
	if err != nil {
		t.Fatal(err)
	}
	hs := hubspottest.New(t)
	fake := hs.App()
	app, err := store.CreateApp(ctx, domain.NewApp{Kind: domain.AppKindHubSpot, Name: "tidemark-hub", ProviderAppID: fake.ID,
		ClientID: fake.ClientID, ClientSecret: fake.ClientSecret, Scopes: []string{"crm.objects.contacts.read"},
		AuthorizeURL: hs.AuthorizeURL(), APIBaseURL: hs.URL(), AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	access, refresh := hs.InstallTokens(portal)
	secret, config, err := provider.HubSpot.Setup("", nil)
	if err != nil {
		t.Fatal(err)
	}
	in, err := store.InstallByOAuth(ctx, domain.AppOAuthInstall{AppID: app.ID, TenantID: tenant.ID, PortalID: portal,
		ProviderName: domain.DefaultAppProvider, NewSecret: secret, NewConfig: config,
		Tokens: domain.AppTokens{AccessToken: access, RefreshToken: refresh, Expiry: time.Now().Add(30 * time.Minute)}})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{store: store, ctx: ctx, hs: hs, tenant: tenant, app: app, install: in}
}

func (f fixture) reader(t *testing.T) *journal.Reader {
	return journal.New(f.store, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})))
}

// testWriter logs through t.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// webhook ingests a HubSpot v3 batch of propertyChange events of contacts
// as the provider URL would: {objectId, property, value, occurredAt ms}.
func (f fixture) webhook(t *testing.T, changes ...change) {
	t.Helper()
	var b strings.Builder
	b.WriteString("[")
	for i, c := range changes {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"portalId":%d,"subscriptionId":1,"eventId":%d,"objectId":%d,"occurredAt":%d,`+
			`"subscriptionType":"contact.propertyChange","propertyName":%q,"propertyValue":%q}`,
			portal, 900+i, c.id, c.ms, c.property, c.value)
	}
	b.WriteString("]")
	p, err := f.store.Endpoint(f.ctx, "acme", domain.DefaultAppProvider)
	if err != nil {
		t.Fatal(err)
	}
	events, err := provider.HubSpot.Parse(nil, []byte(b.String()), p)
	if err != nil {
		t.Fatal(err)
	}
	for i := range events {
		events[i].Seq = i
	}
	d := domain.Delivery{ID: newID(), TenantID: p.TenantID, ProviderID: p.ID, ReceivedAt: time.Now(), Status: 200,
		Signature: domain.SignatureValid, Body: []byte(b.String())}
	results, err := f.store.Ingest(f.ctx, d, p, events)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Outcome != domain.Applied {
			t.Fatalf("webhook event %s: %s (%s)", r.EventID, r.Outcome, r.Reason)
		}
	}
}

type change struct {
	id              int64
	property, value string
	ms              int64
}

// update is a journal UPDATE of contact id.
func update(id int64, at time.Time, props map[string]string) hubspottest.Entry {
	p := map[string]*string{}
	for k, v := range props {
		p[k] = &v
	}
	return hubspottest.Entry{ObjectTypeID: "0-1", ObjectID: id, Action: "UPDATE", OccurredAt: at.UnixMilli(), Properties: p}
}

// outcomes are the outcomes of the journal's events, by event id, and
// the number of journal deliveries.
func (f fixture) outcomes(t *testing.T) (map[string][]string, int) {
	t.Helper()
	rows, err := f.store.Pool().Query(f.ctx, `
SELECT e.event_id, e.outcome FROM events e JOIN deliveries d ON d.tenant_id = e.tenant_id AND d.id = e.delivery_id
WHERE e.tenant_id = $1 AND d.source = 'journal' ORDER BY d.received_at, e.seq`, f.tenant.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var id, outcome string
		if err := rows.Scan(&id, &outcome); err != nil {
			t.Fatal(err)
		}
		out[id] = append(out[id], outcome)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := f.store.Pool().QueryRow(f.ctx, `SELECT count(*) FROM deliveries WHERE tenant_id = $1 AND source = 'journal'`,
		f.tenant.ID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return out, n
}

// cursor is the install's cursor: offset, entries read, found missed, expirations.
func (f fixture) cursor(t *testing.T) (offset string, read, missed, expirations int64) {
	t.Helper()
	if err := f.store.Pool().QueryRow(f.ctx, `
SELECT coalesce(journal_offset, ''), entries_read, found_missed, expirations FROM app_journal_cursors
WHERE tenant_id = $1 AND install_id = $2`, f.tenant.ID, f.install.ID).Scan(&offset, &read, &missed, &expirations); err != nil {
		t.Fatal(err)
	}
	return offset, read, missed, expirations
}

// auditActions are the tenant's audit entries' actions, oldest first.
func (f fixture) auditActions(t *testing.T) []string {
	t.Helper()
	rows, err := f.store.Pool().Query(f.ctx, `SELECT action FROM audit_log WHERE tenant_id = $1 ORDER BY id`, f.tenant.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}
