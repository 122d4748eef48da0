// Package e2e gates the tests that drive programs outside Go (Chromium,
// Node packages, OpenSSL): they run when TIDEMARK_E2E=1, which .ci/run sets
// after installing what they need, and are skipped otherwise.
package e2e

import (
	"os"
	"testing"
)

// Require skips t with a one-line reason unless TIDEMARK_E2E=1. needs names
// what the test drives, for example "Chromium" or "node and @hubspot/api-client".
func Require(t testing.TB, needs string) {
	t.Helper()
	if os.Getenv("TIDEMARK_E2E") != "1" {
		t.Skipf("needs %s: set TIDEMARK_E2E=1 (make test-e2e) to run it", needs)
	}
}
