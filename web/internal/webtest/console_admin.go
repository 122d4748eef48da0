package webtest

import (
	"context"

	"github.com/PuerkitoBio/goquery"
)

// operatorID finds an operator's id from the store.
func (e *Env) OperatorID(email string) int64 {
	e.T.Helper()
	ops, err := e.Store.Operators(context.Background())
	if err != nil {
		e.T.Fatal(err)
	}
	for _, o := range ops {
		if o.Email == email {
			return o.ID
		}
	}
	e.T.Fatalf("no operator %s", email)
	return 0
}

// redirectOf fetches path and returns the status and the redirect target.
func (b *Browser) RedirectOf(path string) (int, string) {
	b.E.T.Helper()
	resp, err := b.Client.Get(b.E.Srv.URL + path)
	if err != nil {
		b.E.T.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// memberships lists the workspace links of an operator's row.
func Memberships(row *goquery.Selection) []string {
	var slugs []string
	row.Find("ul.memberships li a").Each(func(_ int, a *goquery.Selection) { slugs = append(slugs, a.Text()) })
	return slugs
}
