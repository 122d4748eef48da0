package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// signWithNode runs testdata/<dir>/sign.mjs, which signs with a provider's
// own Node library (lib, installed there by npm ci), on input as JSON, and
// returns the signature it prints. CI installs the library; the test
// installs nothing.
func signWithNode(t *testing.T, dir, lib string, input any) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed")
	}
	abs, err := filepath.Abs(filepath.Join("testdata", dir))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(abs, "node_modules", lib, "package.json")); err != nil {
		t.Fatalf("%s is not installed: run npm ci --prefix internal/provider/testdata/%s", lib, dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in, _ := json.Marshal(input)
	sign := exec.CommandContext(ctx, node, "sign.mjs")
	sign.Dir = abs
	sign.Stdin = bytes.NewReader(in)
	out, err := sign.Output()
	if err != nil {
		t.Fatalf("node sign.mjs (%s): %v %s", lib, err, out)
	}
	return strings.TrimSpace(string(out))
}
