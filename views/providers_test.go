package views_test

import (
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

func TestProvidersList(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	crm := domain.ProviderSummary{Provider: domain.Provider{Name: "crm", Kind: "standard", CreatedAt: at},
		ActiveSecrets: 2, Deliveries24h: 7, LastDeliveryAt: at.Add(time.Hour)}
	quiet := domain.ProviderSummary{Provider: domain.Provider{Name: "ship-eu", Kind: "shippo", CreatedAt: at}, ActiveSecrets: 1}
	kinds := []views.ProviderKind{{Name: "standard", Title: "Standard"}, {Name: "shippo", Title: "Shippo", About: "Shippo's webhooks."}}
	for _, tc := range []struct {
		name string
		view views.ProvidersView
		rows [][]string
		says string
	}{
		{"none", views.ProvidersView{Kinds: kinds}, nil, "No providers yet."},
		{"two", views.ProvidersView{Kinds: kinds, Providers: []domain.ProviderSummary{crm, quiet}}, [][]string{
			{"crm", "standard", "2026-11-29 10:00:00 UTC", "2", "7", "2026-11-29 11:00:00 UTC"},
			{"ship-eu", "shippo", "2026-11-29 10:00:00 UTC", "1", "0", "never"},
		}, "Each provider is one webhook source"},
		{"refused form keeps what was typed", views.ProvidersView{Kinds: kinds,
			Form: views.ProviderForm{Name: "Bad Name", Kind: "shippo", Error: `provider "Bad Name" must be 1-63 characters`}},
			nil, `provider "Bad Name" must be 1-63 characters`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			doc, _ := render(t, views.Providers(acme("providers"), tc.view))
			var rows [][]string
			doc.Find("table.providers tbody tr").Each(func(_ int, tr *goquery.Selection) {
				var cells []string
				tr.Find("td").Each(func(_ int, td *goquery.Selection) { cells = append(cells, seen(td)) })
				rows = append(rows, cells)
			})
			if len(rows) != len(tc.rows) {
				t.Fatalf("%d rows, want %d: %q", len(rows), len(tc.rows), rows)
			}
			for i := range rows {
				if strings.Join(rows[i], " | ") != strings.Join(tc.rows[i], " | ") {
					t.Errorf("row %d\n got %q\nwant %q", i, rows[i], tc.rows[i])
				}
			}
			if len(tc.rows) > 0 && doc.Find(`table.providers a[href="/t/acme/providers/crm"]`).Text() != "crm" {
				t.Error("no link to the provider's page")
			}
			if got := seen(doc.Find("main")); !strings.Contains(got, tc.says) {
				t.Errorf("page does not say %q", tc.says)
			}

			form := doc.Find(`form[method=post][action="/t/acme/providers"]`)
			if tc.view.Form.Kind == "" {
				// The choice of kinds: a link to each kind's form, no form yet.
				var links []string
				doc.Find("a.kind-choice").Each(func(_ int, a *goquery.Selection) {
					links = append(links, a.AttrOr("href", "")+" "+seen(a.Find("strong")))
				})
				if want := "/t/acme/providers?kind=standard#connect Standard, /t/acme/providers?kind=shippo#connect Shippo"; strings.Join(links, ", ") != want {
					t.Errorf("kind choices %q, want %q", links, want)
				}
				if form.Length() != 0 {
					t.Error("a form before a kind is chosen")
				}
				return
			}
			if got := form.Find("input[name=name]").AttrOr("value", "?"); got != tc.view.Form.Name {
				t.Errorf("name field %q, want %q", got, tc.view.Form.Name)
			}
			if got := form.Find("input[type=hidden][name=kind]").AttrOr("value", ""); got != tc.view.Form.Kind {
				t.Errorf("kind posted %q, want %q", got, tc.view.Form.Kind)
			}
			if doc.Find("a.kind-choice").Length() != 0 || !strings.Contains(seen(doc.Find(".provider-connect h2")), "Connect a Shippo provider") {
				t.Errorf("chosen kind's form: %q", seen(doc.Find(".provider-connect h2")))
			}
		})
	}
}
