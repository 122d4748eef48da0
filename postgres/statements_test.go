package postgres

import (
	"github.com/tidemark/tidemark/postgres/internal/pg"

	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/testdb"
)

// minStatements is how many static statements the package has today (the
// event-log statement with every condition included). The test fails below
// it, so a parser that stops finding statements cannot pass unnoticed.
const minStatements = 78

// templateArgs fill the identifiers of DDL-style templates with real tables,
// as the code does with pgx.Identifier; any other template gets "" for
// each %s, as eventLogSQL does without filters.
var templateArgs = map[string][]any{
	"detachedRowDaysSQL":  {`"deliveries"`},
	"moveDetachedRowsSQL": {`"deliveries"`, `"deliveries"`},
}

var (
	sqlStart     = regexp.MustCompile(`(?i)^(SELECT|INSERT|UPDATE|DELETE|WITH)\b`)
	templateVerb = regexp.MustCompile(`%(\[[0-9]+\])?s`)
	positional   = regexp.MustCompile(`\$[0-9]+`)
)

// TestStatementsPrepare prepares every static statement of the package, as
// found in its source, on a freshly migrated database: a renamed column, a
// typo or a parameter whose type PostgreSQL cannot infer fails here rather
// than on the request that first runs it.
func TestStatementsPrepare(t *testing.T) {
	t.Parallel()
	stmts, conds := packageStatements(t)
	if len(conds) < 9 {
		t.Errorf("found %d event-log conditions, want at least 9", len(conds))
	}
	stmts = append(stmts, foundStatement{
		name: "eventLogSQL with every condition",
		sql:  fmt.Sprintf(eventLogSQL, "\n  AND "+strings.Join(conds, "\n  AND ")),
	})
	t.Logf("preparing %d statements", len(stmts))
	if len(stmts) < minStatements {
		t.Errorf("found %d statements, want at least %d", len(stmts), minStatements)
	}

	ctx := context.Background()
	conn, err := testdb.New(t).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, st := range stmts {
		if _, err := conn.Conn().Prepare(ctx, "", pg.Named(st.sql).SQL); err != nil {
			t.Errorf("%s: %v", st.name, err)
		}
	}
}

type foundStatement struct {
	name string // the constant's or variable's name, or file:line
	sql  string // with @name parameters; templates filled
}

// packageStatements parses the package's non-test source and returns its
// static statements and the event-log conditions (the constants named
// eventLog... that are not statements), in source order. It reports
// statements that break the package rule.
func packageStatements(t *testing.T) (stmts []foundStatement, conds []string) {
	t.Helper()
	fset := token.NewFileSet()
	src := sourceConstants{pkg: parseDir(t, fset, "."), domain: parseDir(t, fset, "../domain")}
	for _, f := range src.pkg {
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					vs, ok := spec.(*ast.ValueSpec)
					if !ok {
						continue
					}
					for i, id := range vs.Names {
						if i >= len(vs.Values) {
							continue
						}
						s, err := src.eval(vs.Values[i], false)
						if err != nil {
							if holdsSQL(vs.Values[i]) {
								t.Errorf("%s (%s): cannot evaluate: %v", id.Name, fset.Position(id.Pos()), err)
							}
							continue
						}
						switch {
						case sqlStart.MatchString(strings.TrimSpace(s)):
							if !strings.HasSuffix(id.Name, "SQL") {
								t.Errorf("statement %s (%s): its name must end in SQL", id.Name, fset.Position(id.Pos()))
							}
							stmts = append(stmts, foundStatement{name: id.Name, sql: fillTemplate(t, id.Name, s)})
						case decl.Tok == token.CONST && strings.HasPrefix(id.Name, "eventLog") && !strings.HasSuffix(id.Name, "SQL"):
							conds = append(conds, s)
						}
					}
				}
			case *ast.FuncDecl:
				// Inline statements break the rule; they are still prepared.
				// Error messages ("delete expired keys: %w") are prose.
				messages := map[*ast.BasicLit]bool{}
				ast.Inspect(decl, func(n ast.Node) bool {
					if call, ok := n.(*ast.CallExpr); ok && isMessageFunc(call.Fun) {
						for _, arg := range call.Args {
							if lit, ok := arg.(*ast.BasicLit); ok {
								messages[lit] = true
							}
						}
					}
					lit, ok := n.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING || messages[lit] {
						return true
					}
					s, _ := strconv.Unquote(lit.Value)
					if sqlStart.MatchString(strings.TrimSpace(s)) {
						pos := fset.Position(lit.Pos())
						name := fmt.Sprintf("%s:%d", filepath.Base(pos.Filename), pos.Line)
						t.Errorf("%s: inline SQL; make it a package-level constant ending in SQL", name)
						stmts = append(stmts, foundStatement{name: name, sql: s})
					}
					return true
				})
			}
		}
	}
	for _, st := range stmts {
		if positional.MatchString(st.sql) {
			t.Errorf("%s: positional parameter %s; use @name", st.name, positional.FindString(st.sql))
		}
	}
	return stmts, conds
}

func parseDir(t *testing.T, fset *token.FileSet, dir string) []*ast.File {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// sourceConstants evaluates string constant expressions of the package:
// literals, concatenations, the package's constants, domain's constants
// and named(...).
type sourceConstants struct {
	pkg, domain []*ast.File
}

func (c sourceConstants) eval(e ast.Expr, inDomain bool) (string, error) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", fmt.Errorf("%s is not a string", e.Value)
		}
		return strconv.Unquote(e.Value)
	case *ast.ParenExpr:
		return c.eval(e.X, inDomain)
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", fmt.Errorf("operator %s", e.Op)
		}
		x, err := c.eval(e.X, inDomain)
		if err != nil {
			return "", err
		}
		y, err := c.eval(e.Y, inDomain)
		return x + y, err
	case *ast.Ident:
		files := c.pkg
		if inDomain {
			files = c.domain
		}
		return c.constant(files, e.Name, inDomain)
	case *ast.SelectorExpr:
		if pkg, ok := e.X.(*ast.Ident); ok && pkg.Name == "domain" && !inDomain {
			return c.constant(c.domain, e.Sel.Name, true)
		}
	case *ast.CallExpr:
		if fn, ok := e.Fun.(*ast.SelectorExpr); ok && fn.Sel.Name == "Named" && len(e.Args) == 1 && !inDomain {
			if pkg, ok := fn.X.(*ast.Ident); ok && pkg.Name == "pg" {
				return c.eval(e.Args[0], false)
			}
		}
	}
	return "", fmt.Errorf("unsupported expression %T", e)
}

func (c sourceConstants) constant(files []*ast.File, name string, inDomain bool) (string, error) {
	for _, f := range files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if id.Name == name && i < len(vs.Values) {
						return c.eval(vs.Values[i], inDomain)
					}
				}
			}
		}
	}
	return "", fmt.Errorf("no string constant %s", name)
}

// isMessageFunc reports whether fn makes an error or a message from its
// arguments: Errorf of any package, errors.New, notFound.
func isMessageFunc(fn ast.Expr) bool {
	var name string
	switch fn := fn.(type) {
	case *ast.Ident:
		name = fn.Name
	case *ast.SelectorExpr:
		name = fn.Sel.Name
	}
	return name == "Errorf" || name == "New" || name == "notFound"
}

// holdsSQL reports whether any string literal in e starts a statement.
func holdsSQL(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			s, _ := strconv.Unquote(lit.Value)
			found = found || sqlStart.MatchString(strings.TrimSpace(s))
		}
		return !found
	})
	return found
}

func fillTemplate(t *testing.T, name, sql string) string {
	t.Helper()
	if !templateVerb.MatchString(sql) {
		return sql
	}
	args, ok := templateArgs[name]
	if !ok {
		return templateVerb.ReplaceAllString(sql, "")
	}
	filled := fmt.Sprintf(sql, args...)
	if strings.Contains(filled, "%!") {
		t.Errorf("%s: template arguments do not fit: %s", name, filled)
	}
	return filled
}
