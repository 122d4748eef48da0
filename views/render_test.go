package views_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
	"github.com/a-h/templ"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/views"
)

// render renders c as the handlers do, into a buffer, and parses the page.
func render(t *testing.T, c templ.Component) (*goquery.Document, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Render(context.Background(), &buf); err != nil {
		t.Fatalf("render: %v", err)
	}
	html := buf.String()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(html))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return doc, html
}

// text is the whitespace-collapsed text of what sel matches.
func text(doc *goquery.Document, sel string) string {
	return strings.Join(strings.Fields(doc.Find(sel).Text()), " ")
}

// seen is the text of s as a user reads it: words of separate elements
// stay separate even where the markup has no space between them.
func seen(s *goquery.Selection) string {
	var parts []string
	s.Contents().Each(func(_ int, c *goquery.Selection) {
		if goquery.NodeName(c) == "#text" {
			parts = append(parts, c.Text())
		} else {
			parts = append(parts, seen(c))
		}
	})
	return strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
}

// acme is the layout of a signed-in owner of tenant acme.
func acme(nav string) views.Layout {
	return acmeAs(nav, domain.RoleOwner)
}

// acmeAs is the layout of a signed-in member of tenant acme with role.
func acmeAs(nav string, role domain.Role) views.Layout {
	t := domain.Tenant{ID: 1, Slug: "acme", Name: "Acme Inc"}
	return views.Layout{Title: "Test", UserEmail: "ops@example.com", Tenant: t, Role: role, Tenants: []domain.Tenant{t}, Nav: nav}
}
