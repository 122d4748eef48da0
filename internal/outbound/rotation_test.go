package outbound_test

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestFirstMessageAfterRotationCarriesBoth: a destination rotated while a
// node is sending it signs the very next message with both secrets, not
// only once its lease is renewed, so a consumer that switches to the new
// secret at once refuses nothing.
func TestFirstMessageAfterRotationCarriesBoth(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t)
	signatures := make(chan int, 10)
	rc.setAnswer(func(_ arrival, _ http.ResponseWriter, r *http.Request) int {
		signatures <- len(strings.Fields(r.Header.Get("webhook-signature")))
		return http.StatusOK
	})
	d := e.httpDestination(t, rc, 8)
	o := fast()
	// The lease is renewed, and the destination given back when idle,
	// long after the test: the worker that sent the first message sends
	// the next.
	o.LeaseTTL, o.LeaseEvery, o.Idle = 10*time.Minute, 5*time.Minute, 5*time.Minute
	e.run(t, o)

	e.ingest(t, "c1", 1)
	if n := <-signatures; n != 1 {
		t.Fatalf("before the rotation the message carried %d signatures, want 1", n)
	}
	secret, err := e.store.RotateDestinationSecret(asCLI, e.p.TenantID, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	rc.mu.Lock()
	rc.secret = secret // the consumer switches at once: an old signature alone fails
	rc.mu.Unlock()
	e.ingest(t, "c1", 2)
	select {
	case n := <-signatures:
		if n != 2 {
			t.Fatalf("the first message after the rotation carried %d signature(s), want both", n)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no message after the rotation within 20 s")
	}
	waitFor(t, 10*time.Second, "the change delivered", func() bool {
		_, delivered, _ := rc.got()
		return len(delivered) == 2
	})
}
