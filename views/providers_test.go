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
	kinds := []string{"standard", "shippo"}
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
			if got := form.Find("input[name=name]").AttrOr("value", "?"); got != tc.view.Form.Name {
				t.Errorf("name field %q, want %q", got, tc.view.Form.Name)
			}
			var options []string
			form.Find("select[name=kind] option").Each(func(_ int, o *goquery.Selection) {
				s := o.AttrOr("value", "")
				if o.Text() != s {
					s += " labelled " + o.Text()
				}
				if _, ok := o.Attr("selected"); ok {
					s += " (selected)"
				}
				options = append(options, s)
			})
			want := []string{"standard", "shippo"}
			if tc.view.Form.Kind == "shippo" {
				want[1] = "shippo (selected)"
			}
			if strings.Join(options, ", ") != strings.Join(want, ", ") {
				t.Errorf("kind options %q, want %q", options, want)
			}
		})
	}
}
