package postgres

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/testdb"
	"github.com/tidemark/tidemark/postgres/internal/pg"
)

// minStatements is how many static statements the packages under postgres/
// have today (the list templates again with every condition included): 172
// that the root package had alone, pg's audit insert and the four delivery
// templates with their conditions, less the two duplicate checks of
// reconciliation that became one template; 187 with those added since, and
// 206 with the 19 of destinations. The test fails below it, so a parser
// that stops finding statements, or a package it stops finding, cannot
// pass unnoticed.
const minStatements = 206

// templateArgs fill the identifiers of DDL-style templates with real tables,
// as the code does with pgx.Identifier; any other template gets "" for
// each %s, as eventLogSQL does without filters.
var templateArgs = map[string][]any{
	"detachedRowDaysSQL":     {`"deliveries"`},
	"moveDetachedRowsSQL":    {`"deliveries"`, `"deliveries"`},
	"moveDistributedRowsSQL": {`"deliveries"`, `"deliveries"`},
	"reconcileDuplicateSQL":  {"people", "email", "email address"},
	"pagedLogSQL":            {"\n  AND d.replay_of = @replay_of::uuid", "<", "DESC"},
	"jobDeliveriesSQL":       {"\n  AND d.status = @status", ">", "ASC"},
	"countTenantRowsSQL":     {`"records"`},
	"deleteTenantRowsSQL":    {`"records"`},
}

// citusOnly are statements that read Citus' catalog, run only once it is
// known to be there.
var citusOnly = map[string]bool{"distributedTableSQL": true}

// filterTemplates are the list statements whose %s holds the conditions
// of a filter, by the prefix of the conditions' names.
var filterTemplates = map[string]string{
	"eventLogSQL":        "eventLog",
	"deliveryLogSQL":     "deliveryLog",
	"countReplayableSQL": "deliveryLog",
	"nextReplayableSQL":  "deliveryLog",
	"countLogSQL":        "deliveryLog",
	"previewReplaySQL":   "deliveryLog",
}

var (
	sqlStart     = regexp.MustCompile(`(?i)^(SELECT|INSERT|UPDATE|DELETE|WITH)\b`)
	templateVerb = regexp.MustCompile(`%(\[[0-9]+\])?s`)
	positional   = regexp.MustCompile(`\$[0-9]+`)
)

// TestStatementsPrepare prepares every static statement of every package
// under postgres/, as found in their source, on a freshly migrated database: a renamed column, a
// typo or a parameter whose type PostgreSQL cannot infer fails here rather
// than on the request that first runs it.
func TestStatementsPrepare(t *testing.T) {
	t.Parallel()
	stmts, conds := packageStatements(t)
	for prefix, want := range map[string]int{"eventLog": 9, "deliveryLog": 5} {
		if len(conds[prefix]) < want {
			t.Errorf("found %d %s conditions, want at least %d", len(conds[prefix]), prefix, want)
		}
	}
	// The templates of list queries, again with every condition of their filter.
	for _, st := range slices.Clone(stmts) {
		if prefix, ok := filterTemplates[st.name]; ok {
			stmts = append(stmts, foundStatement{
				name: st.name + " with every condition",
				sql:  fmt.Sprintf(st.template, "\n  AND "+strings.Join(conds[prefix], "\n  AND ")),
			})
		}
	}
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
		if citusOnly[st.name] && !testdb.OnCitus() {
			continue
		}
		if _, err := conn.Conn().Prepare(ctx, "", pg.Named(st.sql).SQL); err != nil {
			t.Errorf("%s: %v", st.name, err)
		}
	}
}

type foundStatement struct {
	name     string // the constant's or variable's name, or file:line
	sql      string // with @name parameters; templates filled
	template string // the unfilled template, if any
}

// packageStatements parses the non-test source of every package under
// postgres/ and returns their static statements and the conditions of
// list filters (constants named eventLog... or deliveryLog... that are not
// statements), by prefix, in source order. It reports statements that
// break the package rule. The test kits (packages named ...test) are not
// storage and are left out.
func packageStatements(t *testing.T) (stmts []foundStatement, conds map[string][]string) {
	t.Helper()
	fset := token.NewFileSet()
	src := sourceConstants{pkgs: map[string][]*ast.File{"domain": parseDir(t, fset, "../domain")}}
	var names []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if path == "citus" {
			return filepath.SkipDir // Citus' functions, absent here; TestDistribute runs them
		}
		if files := parseDir(t, fset, path); len(files) > 0 && !strings.HasSuffix(files[0].Name.Name, "test") {
			name := files[0].Name.Name
			if _, dup := src.pkgs[name]; dup {
				t.Fatalf("two packages named %s under postgres/", name)
			}
			src.pkgs[name] = files
			names = append(names, name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 2 {
		t.Fatalf("found packages %v under postgres/, want the root and its engines", names)
	}
	t.Logf("packages: %s", strings.Join(names, " "))
	conds = map[string][]string{}
	for _, name := range names {
		stmts = append(stmts, src.statements(t, fset, name, conds)...)
	}
	for _, st := range stmts {
		if positional.MatchString(st.sql) {
			t.Errorf("%s: positional parameter %s; use @name", st.name, positional.FindString(st.sql))
		}
	}
	return stmts, conds
}

// statements returns the static statements of package pkg and adds its
// filter conditions to conds.
func (src sourceConstants) statements(t *testing.T, fset *token.FileSet, pkg string, conds map[string][]string) (stmts []foundStatement) {
	t.Helper()
	for _, f := range src.pkgs[pkg] {
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
						s, err := src.eval(vs.Values[i], pkg)
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
							stmts = append(stmts, foundStatement{name: id.Name, sql: fillTemplate(t, id.Name, s), template: s})
						case decl.Tok == token.CONST && !strings.HasSuffix(id.Name, "SQL"):
							for _, prefix := range []string{"eventLog", "deliveryLog"} {
								if strings.HasPrefix(id.Name, prefix) {
									conds[prefix] = append(conds[prefix], s)
								}
							}
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
	return stmts
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

// sourceConstants evaluates string constant expressions of the packages
// under postgres/ and domain, by package name: literals, concatenations,
// constants (pkg.Name for another package's) and pg.Named(...).
type sourceConstants struct {
	pkgs map[string][]*ast.File
}

func (c sourceConstants) eval(e ast.Expr, pkg string) (string, error) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind != token.STRING {
			return "", fmt.Errorf("%s is not a string", e.Value)
		}
		return strconv.Unquote(e.Value)
	case *ast.ParenExpr:
		return c.eval(e.X, pkg)
	case *ast.BinaryExpr:
		if e.Op != token.ADD {
			return "", fmt.Errorf("operator %s", e.Op)
		}
		x, err := c.eval(e.X, pkg)
		if err != nil {
			return "", err
		}
		y, err := c.eval(e.Y, pkg)
		return x + y, err
	case *ast.Ident:
		return c.constant(pkg, e.Name)
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok && c.pkgs[x.Name] != nil {
			return c.constant(x.Name, e.Sel.Name)
		}
	case *ast.CallExpr:
		if fn, ok := e.Fun.(*ast.SelectorExpr); ok && fn.Sel.Name == "Named" && len(e.Args) == 1 {
			if x, ok := fn.X.(*ast.Ident); ok && x.Name == "pg" {
				return c.eval(e.Args[0], pkg)
			}
		}
	}
	return "", fmt.Errorf("unsupported expression %T", e)
}

func (c sourceConstants) constant(pkg, name string) (string, error) {
	for _, f := range c.pkgs[pkg] {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if id.Name == name && i < len(vs.Values) {
						return c.eval(vs.Values[i], pkg)
					}
				}
			}
		}
	}
	return "", fmt.Errorf("no string constant %s.%s", pkg, name)
}

// isMessageFunc reports whether fn makes an error or a message from its
// arguments: Errorf of any package, errors.New, pg.NotFound.
func isMessageFunc(fn ast.Expr) bool {
	var name string
	switch fn := fn.(type) {
	case *ast.Ident:
		name = fn.Name
	case *ast.SelectorExpr:
		name = fn.Sel.Name
	}
	return name == "Errorf" || name == "New" || name == "NotFound"
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
