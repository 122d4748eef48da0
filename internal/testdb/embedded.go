package testdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tidemark/tidemark/internal/embedpg"
)

// The embedded cluster.
//
// Where: under os.TempDir()/tidemark-testdb-<uid>/slot-<n>. A cluster dir
// is initialised once and reused by every later test process, so initdb and
// the template migration are paid once per slot, not per package.
//
// Who: a test process holds slot-<n>.lock (flock) for as long as it lives,
// and only the holder runs that slot's server. `go test ./...` runs several
// package binaries at once; each takes the first free slot, so they never
// race for one data directory, and at most about -p slots are ever made.
//
// Until when: embedpg ties the server to the process that started it
// (SIGTERM when it exits), and no other process uses that server, so it
// stops with its test binary, whatever way that ends. Nothing stops it
// earlier: there is no hook after a package's last test. The data dirs stay
// for the next run; delete the folder to start afresh.
const slots = 8

var errNoSlot = errors.New("no embedded cluster slot")

var embedded struct {
	once sync.Once
	url  string
	err  error
	lock *os.File // the held slot lock; never closed
}

// clusterRoot is the folder of the slots. When root, the server runs as
// the postgres user, which must be able to enter it.
func clusterRoot() string {
	return filepath.Join(os.TempDir(), "tidemark-testdb-"+strconv.Itoa(os.Getuid()))
}

// startEmbedded starts this process's embedded cluster, once, and returns
// its maintenance URL.
func startEmbedded(ctx context.Context) (string, error) {
	embedded.once.Do(func() {
		embedded.url, embedded.err = startInSlot(ctx, clusterRoot())
	})
	return embedded.url, embedded.err
}

func startInSlot(ctx context.Context, root string) (string, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod(root, 0o755); err != nil {
		return "", err
	}
	lock, n, err := takeSlot(root)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "slot-"+strconv.Itoa(n))
	// The slot's previous holder has exited, but its server may still be
	// finishing its shutdown checkpoint.
	if err := waitServerGone(ctx, filepath.Join(dir, "pgdata")); err != nil {
		lock.Close()
		return "", err
	}
	c, err := embedpg.Start(ctx, dir, io.Discard)
	if err != nil {
		lock.Close()
		return "", err
	}
	embedded.lock = lock
	return c.URL(), nil
}

// takeSlot locks the first free slot; when all are taken it waits for one.
func takeSlot(root string) (*os.File, int, error) {
	open := func(n int) (*os.File, error) {
		return os.OpenFile(filepath.Join(root, fmt.Sprintf("slot-%d.lock", n)), os.O_RDWR|os.O_CREATE, 0o644)
	}
	for n := range slots {
		f, err := open(n)
		if err != nil {
			return nil, 0, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
			return f, n, nil
		}
		f.Close()
	}
	n := os.Getpid() % slots
	f, err := open(n)
	if err != nil {
		return nil, 0, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("%w: lock slot %d: %w", errNoSlot, n, err)
	}
	return f, n, nil
}

// waitServerGone waits while postmaster.pid names a live process.
func waitServerGone(ctx context.Context, pgdata string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		b, err := os.ReadFile(filepath.Join(pgdata, "postmaster.pid"))
		if err != nil {
			return nil // no file: no server
		}
		first, _, _ := strings.Cut(string(b), "\n")
		pid, err := strconv.Atoi(strings.TrimSpace(first))
		if err != nil || pid <= 0 || syscall.Kill(pid, 0) == syscall.ESRCH {
			return nil // stale: postgres itself removes it
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("embedded cluster in %s: server %d from an earlier test process is still running", pgdata, pid)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
