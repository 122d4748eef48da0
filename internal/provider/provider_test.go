package provider

import (
	"bytes"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/domain"
)

// testNow is the clock of the table tests.
var testNow = time.Unix(1714564860, 0)

// authCase is one request Authenticate must refuse (or, with wantErr "",
// accept) with the verdict wantVerdict.
type authCase struct {
	name        string
	config      map[string]string
	secrets     []string
	target      string // "/webhooks/acme/p" when empty
	remoteAddr  string
	headers     map[string]string
	body        []byte
	wantVerdict string
	wantErr     string // a substring of the error; "" when none is expected
}

// runAuthCases checks each case through k.Authenticate, in parallel.
func runAuthCases(t *testing.T, k Kind, cases []authCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			target := tc.target
			if target == "" {
				target = "/webhooks/acme/p"
			}
			r := httptest.NewRequest(http.MethodPost, "http://hooks.example.com"+target, bytes.NewReader(tc.body))
			if tc.remoteAddr != "" {
				r.RemoteAddr = tc.remoteAddr
			}
			for h, v := range tc.headers {
				r.Header.Set(h, v)
			}
			p := domain.ProviderEndpoint{Provider: domain.Provider{Kind: k.Name(), Config: tc.config}, Secrets: tc.secrets}
			verdict, err := k.Authenticate(r, tc.body, p, testNow)
			if verdict != tc.wantVerdict {
				t.Errorf("verdict %q, want %q (err %v)", verdict, tc.wantVerdict, err)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

// parseCase is a body Parse must refuse as not in the kind's format.
type parseCase struct {
	name    string
	config  map[string]string
	headers map[string]string
	body    []byte
	wantErr string
}

// runParseCases checks that k.Parse refuses each case's body, in parallel.
func runParseCases(t *testing.T, k Kind, cases []parseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodPost, "/webhooks/acme/p", bytes.NewReader(tc.body))
			for h, v := range tc.headers {
				r.Header.Set(h, v)
			}
			p := domain.ProviderEndpoint{Provider: domain.Provider{Kind: k.Name(), Config: tc.config}}
			events, err := k.Parse(r, tc.body, p)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Parse = %d events, %v; want an error containing %q", len(events), err, tc.wantErr)
			}
		})
	}
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	if got, want := strings.Join(Names(), ","), "standard,hubspot,salesforce,shippo"; got != want {
		t.Errorf("Names() = %s, want %s", got, want)
	}
	for _, name := range Names() {
		k, ok := Lookup(name)
		if !ok || k.Name() != name {
			t.Errorf("Lookup(%q) = %v, %v", name, k, ok)
		}
		for _, f := range k.Form().Fields {
			if f.Name == "" || f.Label == "" || f.Input == "" || (!f.Secret && f.Config == "") {
				t.Errorf("kind %s: incomplete field %+v", name, f)
			}
		}
	}
	if _, ok := Lookup("telepathy"); ok {
		t.Error("Lookup(telepathy) found a kind")
	}
	_, _, err := Setup("telepathy", "", nil)
	if domain.ErrorCode(err) != domain.EINVALID || !strings.Contains(err.Error(), `provider kind "telepathy" is not one of standard, hubspot, salesforce, shippo`) {
		t.Errorf("Setup(telepathy) = %v", err)
	}
	if _, err := NewSecret(domain.Provider{Kind: "telepathy"}); domain.ErrorCode(err) != domain.EINVALID {
		t.Errorf("NewSecret(telepathy) = %v", err)
	}
}

func TestFieldError(t *testing.T) {
	t.Parallel()
	_, _, err := Setup("salesforce", "", map[string]string{"org_id": "00D5e000000AbCdEAK", "revision_field": "a b"})
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "revision_field" || fe.Flag != "--revision-field" || fe.Label != "Revision field" {
		t.Fatalf("error %#v, want a FieldError about revision_field", err)
	}
	if domain.ErrorCode(err) != domain.EINVALID || domain.ErrorMessage(err) != err.Error() {
		t.Errorf("code %s, message %q", domain.ErrorCode(err), domain.ErrorMessage(err))
	}
	if want := `--revision-field "a b" is not a Salesforce field name (for example SystemModstamp)`; fe.Message != want {
		t.Errorf("Message %q, want %q", fe.Message, want)
	}
	if want := `Revision field "a b" is not a Salesforce field name (for example SystemModstamp)`; fe.FormMessage != want {
		t.Errorf("FormMessage %q, want %q", fe.FormMessage, want)
	}
}

// TestConstantTimeComparisons checks that no kind compares a secret, token
// or MAC with == or != (only with "" or nil): every check goes through
// matchAny (hmac.Equal) or subtle.ConstantTimeCompare.
func TestConstantTimeComparisons(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("*.go")
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		sensitive := func(x ast.Expr) bool {
			s := strings.ToLower(string(src[fset.Position(x.Pos()).Offset:fset.Position(x.End()).Offset]))
			for _, w := range []string{"secret", "token", "mac", "sig", "got", "want", "org"} {
				if strings.Contains(s, w) {
					return true
				}
			}
			return false
		}
		literal := func(x ast.Expr) bool {
			switch v := x.(type) {
			case *ast.BasicLit:
				return true
			case *ast.Ident:
				return v.Name == "nil" || strings.HasPrefix(v.Name, "shippoAuth")
			case *ast.CallExpr: // a length, which is no secret
				fn, ok := v.Fun.(*ast.Ident)
				return ok && fn.Name == "len"
			case *ast.SelectorExpr: // a constant such as domain.LeadSignupType
				pkg, ok := v.X.(*ast.Ident)
				return ok && pkg.Name == "domain"
			}
			return false
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if b, ok := n.(*ast.BinaryExpr); ok && (b.Op == token.EQL || b.Op == token.NEQ) {
				if (sensitive(b.X) || sensitive(b.Y)) && !literal(b.X) && !literal(b.Y) {
					t.Errorf("%s: non-constant-time comparison %s", fset.Position(b.Pos()), src[fset.Position(b.Pos()).Offset:fset.Position(b.End()).Offset])
				}
			}
			return true
		})
	}
	shared, _ := os.ReadFile("shared.go")
	if !bytes.Contains(shared, []byte("hmac.Equal(")) {
		t.Error("matchAny does not use hmac.Equal")
	}
}

// TestKindNamesStayHome checks that no Go file outside a kind's homes
// (tests aside) names it, so that adding a kind never means editing a
// switch elsewhere. A kind has two homes: internal/provider, where every
// kind lives, and internal/pull/<kind>/, its API's sources, which may name
// their own kind only.
func TestKindNamesStayHome(t *testing.T) {
	t.Parallel()
	named := regexp.MustCompile(`"(` + strings.Join(Names(), "|") + `)"`)
	root := filepath.Join("..", "..")
	sources := filepath.Join("internal", "pull") + string(filepath.Separator)
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
		// The tests' kits (webtest, pgtest, queuetest) are test code in
		// non-test files: tests aside means them too.
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			strings.HasSuffix(filepath.Base(filepath.Dir(path)), "test") ||
			strings.HasPrefix(rel, filepath.Join("internal", "provider")+string(filepath.Separator)) {
			return nil
		}
		home := "" // the kind whose sources the file is
		if strings.HasPrefix(rel, sources) {
			home, _, _ = strings.Cut(strings.TrimPrefix(rel, sources), string(filepath.Separator))
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		// A line marked "not a provider kind" uses one of the words for
		// something else (a destination's format "standard").
	lines:
		for _, line := range strings.Split(string(src), "\n") {
			if strings.Contains(line, "// not a provider kind") {
				continue
			}
			for _, m := range named.FindAllStringSubmatch(line, -1) {
				if m[1] != home {
					t.Errorf("%s names a provider kind (%s): look it up in the registry instead", rel, m[0])
					break lines
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
