package sink_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/domain"
	"github.com/tidemark/tidemark/domain/stream"
	"github.com/tidemark/tidemark/internal/sink"
)

// TestCheckForm: the kind a destination's fields imply when none is
// given, as they did before kinds were stored, and a kind given that the
// fields must fit.
func TestCheckForm(t *testing.T) {
	t.Parallel()
	const url, natsURL = "https://hooks.example.com/x", "nats://nats.example.com:4222"
	nkey := stream.NATSAuth{NKey: "SUAJ6IRC2DLKBXW5AYCQYCKHMLIPSQFSRVPGMRRZ3O5MHRI6ZDEVRJFNDU"}
	for _, tc := range []struct {
		name                string
		nd                  stream.NewDestination
		kind, format, types string
	}{
		{"url", stream.NewDestination{URL: url}, "webhook", stream.FormatStandard, "record.*"},
		{"url with alerts", stream.NewDestination{URL: url, Types: []string{"record.*", "alert.*"}}, "webhook", stream.FormatStandard, "record.*,alert.*"},
		{"format slack", stream.NewDestination{URL: url, Format: stream.FormatSlack}, "slack", stream.FormatSlack, "alert.*"},
		{"nats_url", stream.NewDestination{NATSURL: natsURL, Subject: "crm", NATS: nkey}, "nats", stream.FormatStandard, "record.*"},
		{"nats_url, private", stream.NewDestination{NATSURL: natsURL, Subject: "crm", AllowPrivate: true}, "nats", stream.FormatStandard, "record.*"},
		{"kind webhook", stream.NewDestination{Kind: "webhook", URL: url, Format: stream.FormatStandard}, "webhook", stream.FormatStandard, "record.*"},
		{"kind slack", stream.NewDestination{Kind: "slack", URL: url}, "slack", stream.FormatSlack, "alert.*"},
		{"kind nats", stream.NewDestination{Kind: "nats", NATSURL: natsURL, Subject: "crm", NATS: nkey}, "nats", stream.FormatStandard, "record.*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			nd, err := sink.CheckForm(tc.nd)
			if err != nil || nd.Kind != tc.kind || nd.Format != tc.format || strings.Join(nd.Types, ",") != tc.types {
				t.Errorf("%+v, %v; want kind %s, format %s, types %s", nd, err, tc.kind, tc.format, tc.types)
			}
		})
	}
	for _, tc := range []struct {
		nd   stream.NewDestination
		want string
	}{
		{stream.NewDestination{}, "give url (an http or https URL to POST to), or nats_url and subject"},
		{stream.NewDestination{Kind: "teams", URL: url}, `kind "teams" is not a destination kind: one of ` + strings.Join(sink.Names(), ", ")},
		{stream.NewDestination{Kind: "nats", URL: url}, "kind nats takes nats_url and subject, not url"},
		{stream.NewDestination{Kind: "nats"}, "kind nats needs nats_url and subject"},
		{stream.NewDestination{Kind: "webhook", NATSURL: natsURL, Subject: "crm"}, "kind webhook takes url, not nats_url and subject"},
		{stream.NewDestination{Kind: "slack"}, "kind slack needs url"},
		{stream.NewDestination{Kind: "webhook", URL: url, Format: stream.FormatSlack}, "kind webhook sends format standard, not slack"},
		{stream.NewDestination{Kind: "slack", URL: url, Format: stream.FormatStandard}, "kind slack sends format slack, not standard"},
		{stream.NewDestination{Kind: "slack", URL: url, Types: []string{"record.*"}}, "format slack takes alert types only"},
		{stream.NewDestination{Kind: "nats", NATSURL: natsURL, Subject: "crm", NATS: nkey, Types: []string{"alert.*"}}, "alert types are sent to url destinations only"},
		{stream.NewDestination{NATSURL: natsURL, Subject: "crm", NATS: nkey, Format: stream.FormatSlack, Types: []string{"record.*"}}, "format slack needs url"},
		{stream.NewDestination{URL: url, Format: "teams"}, "format must be standard or slack"},
	} {
		_, err := sink.CheckForm(tc.nd)
		if domain.ErrorCode(err) != domain.EINVALID || !strings.Contains(domain.ErrorMessage(err), tc.want) {
			t.Errorf("%+v: %v, want EINVALID with %q", tc.nd, err, tc.want)
		}
	}
}

// TestKindsDocumented: every registered kind has its row in the table of
// kinds of docs/contract/destinations.md, and every row is a registered
// kind.
func TestKindsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "contract", "destinations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Kinds\n")
	if !ok {
		t.Fatal("docs/contract/destinations.md has no section ## Kinds")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9_]+)` \\|").FindAllStringSubmatch(section, -1) {
		rows = append(rows, m[1])
	}
	for _, name := range sink.Names() {
		if !slices.Contains(rows, name) {
			t.Errorf("kind %s has no row in the table of kinds of docs/contract/destinations.md", name)
		}
	}
	for _, row := range rows {
		if _, ok := sink.Lookup(row); !ok {
			t.Errorf("docs/contract/destinations.md lists kind %s, which is not registered", row)
		}
	}
}

// namedElsewhere are the files outside internal/sink that may hold a
// kind's name, each for something else of the same spelling.
var namedElsewhere = map[string]string{
	"domain/stream/alerts.go":     `FormatSlack: the format of alert messages, a destination field the API shows`,
	"web/api/deliveries.go":       `"webhook": a delivery's source, where it came in`,
	"views/delivery_templ.go":     `"webhook": a delivery's source (views/delivery.templ)`,
	"internal/egress/egress.go":   `"nats": the scheme of a NATS server's URL`,
	"cmd/tidemark/destination.go": `"nats": the name of the --nats flag`,
	"cmd/tidemark/commands.go":    `"nats": the --nats flag's metavar`,
}

// TestSinkNamesStayHome checks that no Go file outside internal/sink
// (tests and the tests' kits aside) names a destination kind, so that
// adding a kind never means editing a switch elsewhere: code looks a kind
// up by a destination's stored kind (Lookup, Conns.Send).
func TestSinkNamesStayHome(t *testing.T) {
	t.Parallel()
	named := regexp.MustCompile(`"(` + strings.Join(sink.Names(), "|") + `)"`)
	root := filepath.Join("..", "..")
	home := filepath.Join("internal", "sink") + string(filepath.Separator)
	excused := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		// client/ holds the API's clients, generated from its document
		// (whose enums name the kinds), each a module of its own.
		if d.IsDir() && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") || rel == "client") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			strings.HasSuffix(filepath.Base(filepath.Dir(path)), "test") || strings.HasPrefix(rel, home) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		switch m := named.Find(src); {
		case m == nil:
		case namedElsewhere[filepath.ToSlash(rel)] != "":
			excused[filepath.ToSlash(rel)] = true
		default:
			t.Errorf("%s names a destination kind (%s): look it up in internal/sink instead", rel, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for file := range namedElsewhere {
		if !excused[file] {
			t.Errorf("%s names no destination kind any more: take it off namedElsewhere", file)
		}
	}
}
