package web_test

import (
	"flag"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/tidemark/tidemark/web"
)

var update = flag.Bool("update", false, "rewrite testdata/routes.txt from the router")

// TestRoutes compares every route the server answers with
// testdata/routes.txt, the one list of them all, so that the list cannot
// drift from the surfaces' route tables. After changing a route, run
// go test ./web -run TestRoutes -update and review the diff.
func TestRoutes(t *testing.T) {
	t.Parallel()
	router, ok := web.New(web.Config{}).Handler().(chi.Routes)
	if !ok {
		t.Fatal("Handler is not a chi router")
	}
	var lines []string
	err := chi.Walk(router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		lines = append(lines, method+" "+route)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	got := strings.Join(lines, "\n") + "\n"
	const golden = "testdata/routes.txt"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("the routes differ from %s (run go test ./web -run TestRoutes -update and review the diff):\n%s", golden, got)
	}
}
