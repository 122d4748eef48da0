package docs_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidemark/tidemark/internal/e2e"
)

// TestGoClientIsCurrent: the committed Go client, client/go/tidemark.gen.go,
// is what the //go:generate line of client/go/generate.go makes of this
// document now, so the client cannot drift from the API's description. The
// line runs there, on copies of client/go and of the document laid out as
// in the repository.
func TestGoClientIsCurrent(t *testing.T) {
	e2e.Require(t, "the go command and the module proxy (the test runs the pinned oapi-codegen)")
	t.Parallel()
	clientDir := filepath.Join("..", "client", "go")
	src, err := os.ReadFile(filepath.Join(clientDir, "generate.go"))
	if err != nil {
		t.Fatal(err)
	}
	_, line, ok := strings.Cut(string(src), "//go:generate ")
	if !ok {
		t.Fatal("client/go/generate.go has no //go:generate line")
	}
	line, _, _ = strings.Cut(line, "\n")
	args := strings.Fields(line)

	root := t.TempDir()
	dir := filepath.Join(root, "client", "go")
	if err := os.CopyFS(dir, os.DirFS(clientDir)); err != nil {
		t.Fatal(err)
	}
	generated := filepath.Join(dir, "tidemark.gen.go")
	if err := os.Remove(generated); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(root, "docs"), os.DirFS(".")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}

	want, err := os.ReadFile(filepath.Join(clientDir, "tidemark.gen.go"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(generated)
	if err != nil {
		t.Fatalf("%s wrote no tidemark.gen.go: %v", line, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("client/go/tidemark.gen.go is not what docs/openapi.yaml makes now: run go generate in client/go "+
			"and commit the result; the first difference is at line %d", firstDifferentLine(got, want))
	}
}

// firstDifferentLine is the number of the first line where a and b differ.
func firstDifferentLine(a, b []byte) int {
	al, bl := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(al), len(bl)) {
		if !bytes.Equal(al[i], bl[i]) {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}
