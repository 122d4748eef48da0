package whsig

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/e2e"
)

// verifyWithNode runs testdata/standardwebhooks/verify.mjs, which verifies
// the message with the Standard Webhooks reference library against the
// clock, and returns its refusal, or nil when the library accepts the
// message. CI installs the library; the test installs nothing.
func verifyWithNode(t *testing.T, secret string, h http.Header, body []byte) error {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed")
	}
	dir, err := filepath.Abs(filepath.Join("testdata", "standardwebhooks"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "standardwebhooks", "package.json")); err != nil {
		t.Fatal("standardwebhooks is not installed: run npm ci --prefix internal/whsig/testdata/standardwebhooks")
	}
	headers := map[string]string{}
	for name := range h {
		headers[strings.ToLower(name)] = h.Get(name)
	}
	in, err := json.Marshal(map[string]any{"secret": secret, "headers": headers, "body": string(body)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	verify := exec.CommandContext(ctx, node, "verify.mjs")
	verify.Dir = dir
	verify.Stdin = bytes.NewReader(in)
	out, err := verify.CombinedOutput()
	// A refusal is the script's own "refused: ..." line; any other failure
	// (node crashing, the library missing) fails the test.
	if reason, refused := strings.CutPrefix(string(out), "refused: "); refused && err != nil {
		return errors.New(strings.TrimSpace(reason))
	}
	if err != nil || len(out) > 0 {
		t.Fatalf("node verify.mjs: %v %s", err, out)
	}
	return nil
}

// TestReferenceLibraryVerifies signs messages with one secret and with two
// (a rotation) and has the Standard Webhooks reference library verify them
// as a receiver would, with each secret; the same library refuses a
// tampered body and a secret that signed nothing.
func TestReferenceLibraryVerifies(t *testing.T) {
	t.Parallel()
	e2e.Require(t, "node and standardwebhooks")
	// Multi-byte text: the library signs the body's UTF-8 bytes, as we do.
	body := []byte(`{"type":"contact.updated","data":{"contact_id":"c-1","revision":7,"snapshot":{"job_title":"Directrice générale"}}}`)
	old, current := NewSecret(), NewSecret()

	one := http.Header{}
	if err := Headers(one, []string{current}, "msg_2QwErTy", time.Now(), body); err != nil {
		t.Fatal(err)
	}
	if err := verifyWithNode(t, current, one, body); err != nil {
		t.Errorf("one secret: the library refused: %v", err)
	}

	rotating := http.Header{}
	if err := Headers(rotating, []string{old, current}, "msg_2QwErTz", time.Now(), body); err != nil {
		t.Fatal(err)
	}
	for name, secret := range map[string]string{"old": old, "current": current} {
		if err := verifyWithNode(t, secret, rotating, body); err != nil {
			t.Errorf("two secrets, verified with the %s one: the library refused: %v", name, err)
		}
	}

	// Refusals, so that an acceptance above means something.
	tampered := bytes.Replace(body, []byte("c-1"), []byte("c-2"), 1)
	if err := verifyWithNode(t, current, one, tampered); err == nil {
		t.Error("the library accepted a tampered body")
	}
	if err := verifyWithNode(t, NewSecret(), rotating, body); err == nil {
		t.Error("the library accepted a secret that signed nothing")
	}
}
