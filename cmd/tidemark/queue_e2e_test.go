package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tidemark/tidemark/internal/e2e"
	"github.com/tidemark/tidemark/internal/queue/queuetest"
)

// TestQueuedMode: 5,000 deliveries sent to serve --queue while no worker
// runs are all answered 202 (HubSpot's 200), and none is written; a worker
// started afterwards is killed with SIGKILL in the middle, then it and a
// second worker apply the rest: every delivery is logged once, every event
// applied once and in order, every record applied once per revision.
func TestQueuedMode(t *testing.T) {
	e2e.Require(t, "the go command and NATS with JetStream (the test builds tidemark and kills its worker mid-load)")
	t.Parallel()
	stream := queuetest.Stream(t)
	dbURL, secrets, pool, tenantID := crashSetup(t)
	exe := buildTidemark(t)
	env := serverEnv(dbURL, crashKey)
	queueArgs := []string{"--queue", queuetest.URL(), "--stream", stream}
	srv := startServer(t, exe, env, queueArgs...)

	l := newQueuedLoad(5000)
	began := time.Now()
	var retries atomic.Int64
	answered := sendQueued(t, srv.base, l, secrets, false, &retries, func(int64) {})
	t.Logf("%d deliveries (%d events) answered in %s with no worker running", l.n, l.events, time.Since(began).Round(time.Millisecond))
	if t.Failed() {
		t.FailNow()
	}
	if got := queryInt(t, pool, `SELECT count(*) FROM deliveries WHERE tenant_id = $1`, tenantID); got != 0 {
		t.Fatalf("%d deliveries written before any worker ran", got)
	}

	w := startWorker(t, exe, env, queueArgs...)
	for queryInt(t, pool, `SELECT count(*) FROM deliveries WHERE tenant_id = $1`, tenantID) < l.n/3 {
		time.Sleep(20 * time.Millisecond)
	}
	w.kill()
	killedAt := queryInt(t, pool, `SELECT count(*) FROM deliveries WHERE tenant_id = $1`, tenantID)
	w = startWorker(t, exe, env, queueArgs...)
	w2 := startWorker(t, exe, env, queueArgs...)
	awaitApplied(t, pool, tenantID, l.n, w, w2)
	t.Logf("worker killed with %d of %d deliveries applied; all applied %s after the first answer", killedAt, l.n, time.Since(began).Round(time.Millisecond))
	checkQueuedLog(t, pool, tenantID, l, answered)
}

// natsServer is a private nats-server process with its own store.
type natsServer struct {
	exe, dir string
	port     int
	proc     *child
}

// startNATS runs nats-server with JetStream on port (0: a free one) and
// store dir (empty: a new one), and waits until it accepts connections.
func startNATS(t *testing.T, port int, dir string) *natsServer {
	t.Helper()
	if port == 0 {
		port = freePort(t)
	}
	if dir == "" {
		dir = t.TempDir()
	}
	return runNATS(t, port, dir, "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-js", "-sd", dir)
}

// freePort is a TCP port free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// natsExe is the nats-server binary.
func natsExe() string {
	if exe, err := exec.LookPath("nats-server"); err == nil {
		return exe
	}
	return "/usr/sbin/nats-server"
}

// runNATS runs nats-server with args, which make it listen on port, and
// waits until it accepts connections.
func runNATS(t *testing.T, port int, dir string, args ...string) *natsServer {
	t.Helper()
	exe := natsExe()
	s := &natsServer{exe: exe, dir: dir, port: port, proc: &child{stderr: &syncBuffer{}, exited: make(chan struct{})}}
	s.proc.cmd = exec.Command(exe, args...)
	s.proc.cmd.Stdout, s.proc.cmd.Stderr = s.proc.stderr, s.proc.stderr
	if err := s.proc.cmd.Start(); err != nil {
		t.Fatalf("start nats-server: %v", err)
	}
	go func() { s.proc.cmd.Wait(); close(s.proc.exited) }()
	t.Cleanup(s.proc.kill)
	for deadline := time.Now().Add(30 * time.Second); ; {
		if c, err := net.Dial("tcp", s.addr()); err == nil {
			c.Close()
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("nats-server did not listen:\n%s", s.proc.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *natsServer) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }
func (s *natsServer) url() string  { return "nats://" + s.addr() }

// restart stops the server with sig, waits for it to exit and starts it
// again on the same port and store.
func (s *natsServer) restart(t *testing.T, sig os.Signal) *natsServer {
	t.Helper()
	s.proc.cmd.Process.Signal(sig)
	<-s.proc.exited
	return startNATS(t, s.port, s.dir)
}

// TestQueueServerRestart restarts the NATS server during a load of
// deliveries to serve --queue, once with SIGTERM (a clean stop) and once
// with SIGKILL (the process dies; the operating system keeps what it had
// written, which is what every PubAck waits for, so no fsync is involved:
// a machine crash is what sync_interval covers, see docs/scale.md). Every
// delivery answered "queued" must then be applied by a worker, and every
// event be applied once.
func TestQueueServerRestart(t *testing.T) {
	e2e.Require(t, "the go command and nats-server (the test restarts a NATS server of its own under load)")
	t.Parallel()
	nats := startNATS(t, 0, filepath.Join(t.TempDir(), "jetstream"))
	dbURL, secrets, pool, tenantID := crashSetup(t)
	exe := buildTidemark(t)
	env := serverEnv(dbURL, crashKey)
	queueArgs := []string{"--queue", nats.url()}
	srv := startServer(t, exe, env, queueArgs...)

	l := newQueuedLoad(2400)
	restarts := []struct {
		after int64
		sig   os.Signal
	}{{int64(l.n / 4), syscall.SIGTERM}, {int64(l.n / 2), syscall.SIGKILL}}
	reached := make(chan int, len(restarts))
	done := make(chan []string, 1)
	var retries atomic.Int64
	go func() {
		done <- sendQueued(t, srv.base, l, secrets, true, &retries, func(acks int64) {
			for i, r := range restarts {
				if acks == r.after {
					reached <- i
				}
			}
		})
	}()
	for range restarts {
		select {
		case i := <-reached:
			nats = nats.restart(t, restarts[i].sig)
			t.Logf("nats-server restarted with %v after %d answers", restarts[i].sig, restarts[i].after)
		case <-done:
			t.Fatal("the load ended before the restarts")
		}
	}
	answered := <-done
	t.Logf("%d deliveries answered (%d queued, the others duplicates of a delivery stored whose answer was lost), %d answers of 503 retried",
		l.n, len(answered), retries.Load())
	w := startWorker(t, exe, env, queueArgs...)
	awaitApplied(t, pool, tenantID, l.n, w)
	checkQueuedLog(t, pool, tenantID, l, answered)
}
