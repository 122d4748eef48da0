package backfill_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/pull"
	"github.com/tidemark/tidemark/internal/backfill"
	"github.com/tidemark/tidemark/internal/provider"

	// The sources, registered as cmd/tidemark registers them.
	_ "github.com/tidemark/tidemark/internal/pull/hubspot"
	_ "github.com/tidemark/tidemark/internal/pull/salesforce"
)

// sourceRow is a row of the sources table of docs/contract/backfill.md:
// | `name` | `kind` | reads | yes or no |
var sourceRow = regexp.MustCompile("^\\| `([a-z0-9-]+)` \\| `([a-z0-9_]+)` \\| [^|]+ \\| (yes|no) \\|$")

// TestSourcesHaveDocsRows: every registered source has its row in the
// contract's sources table, saying its kind and whether backfill reads it,
// and every row is a registered source.
func TestSourcesHaveDocsRows(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "contract", "backfill.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "\n## Sources\n")
	section, _, _ = strings.Cut(section, "\n## ")
	rows := map[string][]string{}
	for _, line := range strings.Split(section, "\n") {
		if m := sourceRow.FindStringSubmatch(line); m != nil {
			rows[m[1]] = m[2:]
		}
	}
	registered := backfill.Registered()
	if len(registered) == 0 {
		t.Fatal("no source is registered")
	}
	for _, s := range registered {
		backfills := map[bool]string{true: "yes", false: "no"}[s.Backfill]
		switch row, ok := rows[s.Name]; {
		case !ok:
			t.Errorf("source %s has no row in the sources table of docs/contract/backfill.md", s.Name)
		case row[0] != s.Kind || row[1] != backfills:
			t.Errorf("docs/contract/backfill.md: source %s reads kind %s, backfill %s; its row says %s, %s", s.Name, s.Kind, backfills, row[0], row[1])
		}
		delete(rows, s.Name)
	}
	for name := range rows {
		t.Errorf("docs/contract/backfill.md has a row for source %s, which is not registered", name)
	}
}

// TestSourcesReadKindsWithAnAPI: a source reads a registered provider kind
// whose credentials name an API (cmd/tidemark's tests check the converse).
func TestSourcesReadKindsWithAnAPI(t *testing.T) {
	t.Parallel()
	for _, s := range backfill.Registered() {
		if _, ok := provider.Lookup(s.Kind); !ok || provider.PullAPI(s.Kind) == pull.NoAPI {
			t.Errorf("source %s reads kind %s, which is not a provider kind with an API", s.Name, s.Kind)
		}
	}
}

// TestKindWithoutASource: a provider of a kind no source reads is refused
// with the names of those backfill reads.
func TestKindWithoutASource(t *testing.T) {
	t.Parallel()
	sources := backfill.NewSources(nil, nil)
	_, err := sources(context.Background(), domain.ProviderEndpoint{Provider: domain.Provider{Kind: "standard"}}, nil, pull.Credentials{})
	const want = "provider kind standard has no API to pull from: backfill reads HubSpot and Salesforce"
	if domain.ErrorCode(err) != domain.EINVALID || domain.ErrorMessage(err) != want {
		t.Errorf("%v, want EINVALID %q", err, want)
	}
}
