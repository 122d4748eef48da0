package citustest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// node is one PostgreSQL server of a cluster.
type node struct {
	name string
	dir  string // data directory
	cred *syscall.Credential
	port int

	cmd     *exec.Cmd
	exited  chan struct{} // closed once the server has been reaped
	waitErr error         // valid after exited is closed

	stopOnce sync.Once
	stopErr  error
}

// logPath is beside the data directory, so it exists before initdb and
// outlives a failed start until Stop.
func (n *node) logPath() string { return n.dir + ".log" }

func (n *node) initdb(ctx context.Context) error {
	log, err := os.OpenFile(n.logPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	// --no-sync: a test cluster does not survive a machine crash anyway,
	// and the fsyncs are most of initdb's time.
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"), "-D", n.dir, "-U", dbUser,
		"--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-instructions", "--no-sync")
	cmd.Dir, cmd.Stdout, cmd.Stderr, cmd.Env = filepath.Dir(n.dir), log, log, n.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: n.cred}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: initdb failed (%v); see %s:\n%s", n.name, err, n.logPath(), tail(n.logPath(), 0))
	}
	return nil
}

// start starts the server on a free port. The port is free when chosen but
// another process may bind it before postgres does (tests start clusters
// in parallel), so a start that loses that race is retried on another.
func (n *node) start(ctx context.Context) error {
	var err error
	for range 5 {
		if n.port, err = freePort(); err != nil {
			return err
		}
		var off int64
		if fi, statErr := os.Stat(n.logPath()); statErr == nil {
			off = fi.Size()
		}
		if err = n.launch(ctx); err == nil {
			return nil
		}
		if !strings.Contains(tail(n.logPath(), off), "could not bind") {
			return fmt.Errorf("%s: %w; see %s:\n%s", n.name, err, n.logPath(), tail(n.logPath(), off))
		}
	}
	return fmt.Errorf("%s: no free port after 5 tries: %w", n.name, err)
}

func (n *node) launch(ctx context.Context) error {
	log, err := os.OpenFile(n.logPath(), os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close() // the server keeps its own copy of the descriptor
	// TCP on 127.0.0.1 only, no Unix socket: the nodes and the tests reach
	// one another by host and port, the way Citus's catalog names them.
	// fsync off: a test cluster is thrown away, never recovered.
	cmd := exec.Command(filepath.Join(binDir, "postgres"), "-D", n.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "port="+strconv.Itoa(n.port),
		"-c", "unix_socket_directories=", "-c", "shared_preload_libraries=citus",
		"-c", "max_connections=200", "-c", "shared_buffers=32MB",
		"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit=off")
	cmd.Dir, cmd.Stdout, cmd.Stderr, cmd.Env = filepath.Dir(n.dir), log, log, n.env()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: n.cred,
		// Die with this process, even when it is killed (a test binary
		// that times out runs no cleanup). SIGINT, a fast shutdown: on
		// SIGTERM a server waits for its sessions to end, and the nodes'
		// connections to one another kept three servers of a killed test
		// running (seen here).
		Pdeathsig: syscall.SIGINT,
		// Keep a terminal's Ctrl-C away from the servers: the owner stops
		// them, after it has finished with them.
		Setpgid: true,
	}
	exited := make(chan struct{})
	n.cmd, n.exited, n.waitErr = cmd, exited, nil

	// Pdeathsig fires when the *thread* that forked the child exits
	// (go.dev/issue/27505): the goroutine keeps its thread for the
	// server's life.
	started := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		n.waitErr = cmd.Wait()
		close(exited)
	}()
	if err := <-started; err != nil {
		return err
	}
	return n.waitReady(ctx)
}

// waitReady polls with real connections: only a login proves that the
// server has finished starting.
func (n *node) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, n.url("postgres"))
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-n.exited:
			return fmt.Errorf("postgres exited during startup (%v)", n.waitErr)
		case <-ctx.Done():
			n.stop()
			return fmt.Errorf("postgres not ready after %v: %w", timeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// createDatabase creates the cluster's database with the citus extension.
func (n *node) createDatabase(ctx context.Context) error {
	if err := n.exec(ctx, "postgres", "CREATE DATABASE "+pgx.Identifier{dbName}.Sanitize()); err != nil {
		return err
	}
	return n.exec(ctx, dbName, "CREATE EXTENSION citus")
}

// env is this process's environment for a server, but for HOME and PG*.
// The servers connect to one another with libpq, which reads
// $HOME/.postgresql for client certificates: root's home is closed to the
// postgres user, and a developer's files there are not the cluster's.
// PGHOST and the like would point those connections elsewhere.
func (n *node) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+filepath.Dir(n.dir))
}

func (n *node) url(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", dbUser, n.port, db)
}

// stop asks for a fast shutdown (SIGINT) and waits, escalating to SIGKILL
// of the server's process group after the timeout.
func (n *node) stop() error {
	n.stopOnce.Do(func() {
		if n.cmd == nil || n.exited == nil {
			return
		}
		select {
		case <-n.exited:
			return
		default:
		}
		n.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-n.exited:
		case <-time.After(timeout):
			syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
			<-n.exited
			n.stopErr = fmt.Errorf("%s did not shut down within %v and was killed", n.name, timeout)
		}
	})
	return n.stopErr
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail returns the last lines written to path after offset off, so an
// error shows this start's complaint rather than an earlier one.
func tail(path string, off int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	f.Seek(off, io.SeekStart)
	var lines []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		lines = append(lines, "  "+sc.Text())
	}
	return strings.Join(lines[max(0, len(lines)-15):], "\n")
}
