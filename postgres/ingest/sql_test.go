package ingest

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/<name>.sql from the statement registry")

// goldens are the files that show st whole as each database is sent it,
// with @name parameters, ready to paste into psql: testdata/<name>.sql on
// PostgreSQL, and testdata/<name>.citus.sql on Citus where that differs.
func goldens(st *statement) (paths, texts []string) {
	forms := []struct{ suffix, db, sql string }{{"", "PostgreSQL", st.postgres}}
	if st.citus != st.postgres {
		forms = append(forms, struct{ suffix, db, sql string }{".citus", "Citus", st.citus})
	}
	for _, form := range forms {
		paths = append(paths, filepath.Join("testdata", st.name+form.suffix+".sql"))
		texts = append(texts, "-- "+st.name+", whole, as "+form.db+" is sent it, from the registry of postgres/ingest (statements.go).\n"+
			"-- Regenerate with: go test ./postgres/ingest -run Golden -update\n"+strings.TrimSpace(form.sql)+"\n")
	}
	return paths, texts
}

// TestGoldenStatements: every statement of the registry is in
// testdata/<name>.sql (and <name>.citus.sql) exactly as it runs on each,
// and testdata holds no other.
// A change to a statement or to a fragment of it fails here until its
// golden file is regenerated (-update), so the change shows in review.
func TestGoldenStatements(t *testing.T) {
	var paths []string
	for id, st := range ingestStatements {
		if st == nil {
			t.Fatalf("statement %d has no entry in the registry", id)
		}
		forms, texts := goldens(st)
		paths = append(paths, forms...)
		for i, path := range forms {
			want := texts[i]
			if *update {
				if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("%s: %v; run go test ./postgres/ingest -run Golden -update", st.name, err)
				continue
			}
			if string(got) != want {
				t.Errorf("%s differs from %s at line %d; run go test ./postgres/ingest -run Golden -update and review the diff",
					st.name, path, firstDifference(string(got), want))
			}
		}
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if slices.Contains(paths, f) {
			continue
		}
		if *update {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		} else {
			t.Errorf("%s is no statement of the registry; run go test ./postgres/ingest -run Golden -update", f)
		}
	}
}

// firstDifference is the first line (from 1) on which a and b differ.
func firstDifference(a, b string) int {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}
