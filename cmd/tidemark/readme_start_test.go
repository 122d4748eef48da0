package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeOpening: the README opens with what a newcomer needs before
// the first command (the Go of go.mod, PostgreSQL's server binaries, how
// to take another port) and then the two commands, serve and the tests.
func TestReadmeOpening(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(gomod)
	if goLine == nil {
		t.Fatal("go.mod has no go line")
	}
	opening, _, _ := strings.Cut(string(readme), "\n## ")
	blocks := codeBlocks(opening)
	if len(blocks) < 2 || blocks[0] != "go run ./cmd/tidemark serve" || !strings.HasPrefix(blocks[1], "go test ") {
		t.Fatalf("the README does not open with serve and the tests:\n%q", blocks)
	}
	before, _, _ := strings.Cut(opening, "\n    "+blocks[0]+"\n")
	before = oneLine(before)
	for _, want := range []string{"Go " + string(goLine[1]), "`initdb`", "`postgres`", "apt-get install postgresql",
		"go run ./cmd/tidemark serve --addr 127.0.0.1:9090"} {
		if !strings.Contains(before, want) {
			t.Errorf("the README's opening does not say %q before its first command:\n%s", want, before)
		}
	}
}
