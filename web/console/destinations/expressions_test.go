package destinations_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/tidemark/tidemark/web/internal/webtest"
)

// previewRows are the rows of a page's preview: change, sent, data.
func previewRows(doc *goquery.Document) []string {
	var rows []string
	doc.Find(".dest-preview-rows tbody tr").Each(func(_ int, tr *goquery.Selection) {
		var cells []string
		tr.Find("td").Each(func(_ int, td *goquery.Selection) {
			cells = append(cells, strings.Join(strings.Fields(td.Text()), " "))
		})
		rows = append(rows, strings.TrimSpace(strings.Join(cells, " | ")))
	})
	return rows
}

// TestCreateFormPreview: the create form's preview shows what its filter
// and transform make of the newest changes, keeps what was entered and
// saves nothing; an expression that does not compile is refused in the
// form with CEL's line and column; one that does is saved and shown.
func TestCreateFormPreview(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	owner := e.Operator("owner@example.com", false, "acme")
	e.Deliver1("m1", webtest.SnapshotBody("c-1", 1, `{"email":"a@x","amount":5000}`))
	e.Deliver1("m2", webtest.SnapshotBody("c-2", 1, `{"email":"b@x","amount":20000}`))
	filter, transform := `change.snapshot.amount > 10000`, `{"email": change.snapshot.email}`
	form := url.Values{"url": {publicURL}, "max_in_flight": {"8"}, "filter": {filter}, "transform": {transform}, "preview": {"1"}}

	status, doc, _ := owner.Post("/t/acme/destinations", form)
	acme := e.Tenant("acme").ID
	want := []string{fmt.Sprintf("chg_%d_1 record.applied | filtered |", acme), fmt.Sprintf(`chg_%d_2 record.applied | sent | {"email":"b@x"}`, acme)}
	if status != http.StatusOK || strings.Join(previewRows(doc), "\n") != strings.Join(want, "\n") {
		t.Fatalf("preview: %d\n%s\nwant\n%s", status, strings.Join(previewRows(doc), "\n"), strings.Join(want, "\n"))
	}
	if got := webtest.Text(doc, `textarea[name="filter"]`); got != filter {
		t.Errorf("the form's filter after a preview: %q", got)
	}
	if n := len(destinations(t, e, "acme")); n != 0 {
		t.Fatalf("a preview saved %d destinations", n)
	}

	form.Del("preview")
	form.Set("filter", "change.snapshot.amount >")
	status, doc, _ = owner.Post("/t/acme/destinations", form)
	if status != http.StatusUnprocessableEntity || !strings.HasPrefix(webtest.Text(doc, ".dest-new .error"), "filter: ERROR:1:") {
		t.Fatalf("bad filter: %d %q", status, webtest.Text(doc, ".dest-new .error"))
	}
	if n := len(destinations(t, e, "acme")); n != 0 {
		t.Fatalf("a refused form saved %d destinations", n)
	}
	form.Set("filter", filter)
	if status, _, _ := owner.Post("/t/acme/destinations", form); status != http.StatusOK {
		t.Fatalf("create: %d", status)
	}
	ds := destinations(t, e, "acme")
	if len(ds) != 1 || ds[0].Filter != filter || ds[0].Transform != transform {
		t.Fatalf("created %+v", ds)
	}
	_, doc = owner.Get(fmt.Sprintf("/t/acme/destinations/%d", ds[0].ID))
	if webtest.Text(doc, ".dest-filter-shown") != filter || webtest.Text(doc, ".dest-transform-shown") != transform ||
		webtest.Text(doc, ".dest-filtered") != "0 passed over by the filter" {
		t.Errorf("page: filter %q, transform %q, %q", webtest.Text(doc, ".dest-filter-shown"), webtest.Text(doc, ".dest-transform-shown"),
			webtest.Text(doc, ".dest-filtered"))
	}
}

// TestEditExpressions: the destination page's form previews, refuses,
// saves and removes its filter and transform, each save audited.
func TestEditExpressions(t *testing.T) {
	t.Parallel()
	e := webtest.Setup(t)
	owner := e.Operator("owner@example.com", false, "acme")
	d := create(t, e, "acme")
	changes(e, 2)
	path := fmt.Sprintf("/t/acme/destinations/%d", d.ID)

	status, doc, _ := owner.Post(path+"/expressions", url.Values{"filter": {`change.object_id == "c-1"`}, "preview": {"1"}})
	if rows := previewRows(doc); status != http.StatusOK || len(rows) != 2 || !strings.Contains(rows[0], "| filtered |") ||
		!strings.Contains(rows[1], "| sent | the change") {
		t.Fatalf("preview: %d %q", status, rows)
	}
	if destination(t, e, d.ID).Filter != "" {
		t.Fatal("a preview saved the filter")
	}
	status, doc, _ = owner.Post(path+"/expressions", url.Values{"filter": {`chnage.type == "x"`}})
	if status != http.StatusUnprocessableEntity ||
		webtest.Text(doc, ".dest-actions .error") != "filter: ERROR:1:1: undeclared reference to 'chnage' (did you mean 'change'?)" {
		t.Fatalf("bad filter: %d %q", status, webtest.Text(doc, ".dest-actions .error"))
	}
	if status, _, _ := owner.Post(path+"/expressions", url.Values{"filter": {`change.object_id == "c-1"`}}); status != http.StatusSeeOther {
		t.Fatalf("save: %d", status)
	}
	if got := destination(t, e, d.ID); got.Filter != `change.object_id == "c-1"` || got.Transform != "" {
		t.Fatalf("saved %q %q", got.Filter, got.Transform)
	}
	if status, _, _ := owner.Post(path+"/expressions", url.Values{"filter": {""}}); status != http.StatusSeeOther {
		t.Fatalf("remove: %d", status)
	}
	if got := destination(t, e, d.ID); got.Filter != "" {
		t.Fatalf("removed filter is %q", got.Filter)
	}
	audit := strings.Join(e.AuditLog("acme"), "\n")
	if !strings.Contains(audit, "destination_update") || !strings.Contains(audit, "filter none (was `change.object_id == \"c-1\"`)") {
		t.Errorf("audit:\n%s", audit)
	}
}
