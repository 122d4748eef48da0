// Package embedpg runs a private PostgreSQL cluster for `tidemark serve`
// when no DATABASE_URL is given, so a first-time user gets a working
// server without setting up a database by hand.
//
// The cluster lives entirely under one directory, readable by its owner
// only, and listens only on a Unix socket inside it, so it cannot clash
// with (or be reached through) any system-wide PostgreSQL on TCP port 5432,
// nor be reached by other users of the machine.
package embedpg

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrNoBinaries is returned (wrapped) when initdb and postgres cannot be
// found. Its message names the package to install because that is the
// only thing the user can do about it.
var ErrNoBinaries = errors.New("PostgreSQL server binaries (initdb, postgres) not found on PATH or under /usr/lib/postgresql/*/bin: install them, e.g. apt-get install postgresql")

// searchGlob is where Debian/Ubuntu install server binaries; they are not
// on PATH there. A variable so tests can point it somewhere empty.
var searchGlob = "/usr/lib/postgresql/*/bin"

const (
	dbName  = "tidemark"
	dbUser  = "tidemark"
	port    = "5432"
	timeout = 30 * time.Second

	// maxSocketPath is sizeof(sockaddr_un.sun_path) minus the trailing NUL.
	maxSocketPath = 107
)

// Cluster is a running PostgreSQL server owned by this process.
type Cluster struct {
	dir     string // absolute
	runDir  string
	log     io.Writer
	cmd     *exec.Cmd
	exited  chan struct{} // closed once the server process has been reaped
	waitErr error         // valid after exited is closed

	stopOnce sync.Once
	stopErr  error
}

// Start initialises (first time) or reuses the cluster under dir (e.g.
// "./.tidemark"), starts it listening only on a Unix socket inside dir,
// creates database "tidemark" if missing, and returns once it accepts
// connections. The server outlives ctx; call Stop to shut it down.
func Start(ctx context.Context, dir string, log io.Writer) (*Cluster, error) {
	initdb, postgres, err := findBinaries()
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	pgdata := filepath.Join(dir, "pgdata")
	runDir := filepath.Join(dir, "run")
	logPath := filepath.Join(dir, "postgres.log")

	// Checked up front: postgres would only say "could not create Unix
	// socket", which does not tell the user that the path is too long.
	if sock := filepath.Join(runDir, ".s.PGSQL."+port); len(sock) > maxSocketPath {
		return nil, fmt.Errorf("embedded PostgreSQL: socket path %s is %d bytes, over the Unix limit of %d: run tidemark from a folder with a shorter path, or set DATABASE_URL", sock, len(sock), maxSocketPath)
	}

	// Only the owner may enter the cluster's folders: the socket accepts
	// anyone who reaches it (trust auth), and the folder holds the
	// encryption key of provider secrets. Folders made by an earlier
	// version with wider modes are narrowed.
	for _, d := range []string{dir, runDir, pgdata} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return nil, err
		}
	}

	// initdb and postgres refuse to run as root, so drop to the postgres
	// system user and hand it the directories it must write to.
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		if cred, err = postgresUser(dir); err != nil {
			return nil, err
		}
		for _, d := range []string{dir, pgdata, runDir} {
			if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, err
			}
		}
	}

	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	if err := logFile.Chmod(0o600); err != nil {
		logFile.Close()
		return nil, err
	}
	defer logFile.Close() // the child keeps its own copy of the descriptor

	if _, err := os.Stat(filepath.Join(pgdata, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(log, "initialising PostgreSQL cluster in %s\n", pgdata)
		off := logOffset(logFile)
		cmd := exec.CommandContext(ctx, initdb, "-D", pgdata, "-U", dbUser, "--auth=trust",
			"-E", "UTF8", "--locale=C.UTF-8", "--no-instructions")
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logFile, logFile
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("embedded PostgreSQL: initdb failed (%v); see %s:\n%s", err, logPath, tail(logPath, off))
		}
	} else if err != nil {
		return nil, err
	}

	// Checked before starting: while another server listens on our socket,
	// the readiness probe would connect to *it* and report success.
	if socketInUse(runDir) {
		return nil, fmt.Errorf("embedded PostgreSQL: another tidemark serve appears to be running on %s: stop it, or use another folder", dir)
	}

	fmt.Fprintf(log, "starting PostgreSQL (data %s, log %s)\n", pgdata, logPath)
	off := logOffset(logFile)
	cmd := exec.Command(postgres, "-D", pgdata, "-k", runDir,
		"-c", "listen_addresses=", "-c", "port="+port, "-c", "unix_socket_permissions=0700", "-c", "max_connections=100",
		"-c", "shared_buffers=64MB", "-c", "fsync=on")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: cred,
		// Die with tidemark, even if it is SIGKILLed (Linux only).
		Pdeathsig: syscall.SIGTERM,
		// Keep terminal Ctrl-C away from postgres: tidemark decides when
		// the database goes down, after it has finished with it.
		Setpgid: true,
	}
	c := &Cluster{dir: dir, runDir: runDir, log: log, cmd: cmd, exited: make(chan struct{})}
	if err := c.start(); err != nil {
		return nil, fmt.Errorf("embedded PostgreSQL: start %s: %w", postgres, err)
	}

	if err := c.waitReady(ctx); err != nil {
		c.Stop()
		if strings.Contains(tail(logPath, off), `"postmaster.pid" already exists`) {
			return nil, fmt.Errorf("embedded PostgreSQL: another tidemark serve appears to be running on %s: stop it, or use another folder", dir)
		}
		return nil, fmt.Errorf("embedded PostgreSQL: %w; see %s:\n%s", err, logPath, tail(logPath, off))
	}
	if err := c.createDatabase(ctx); err != nil {
		c.Stop()
		return nil, fmt.Errorf("embedded PostgreSQL: create database %q: %w", dbName, err)
	}
	return c, nil
}

// start launches the server from a goroutine pinned to its OS thread for
// the server's whole life. Pdeathsig fires when the *thread* that forked
// the child exits (go.dev/issue/27505), and pinning stops that thread from
// being handed to other code that might terminate it.
func (c *Cluster) start() error {
	started := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		if err := c.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		c.waitErr = c.cmd.Wait()
		close(c.exited)
	}()
	return <-started
}

// waitReady polls with real connections because that is the only proof
// that the server has finished recovery and accepts logins.
func (c *Cluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, c.url("postgres"))
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-c.exited:
			return fmt.Errorf("postgres exited during startup (%v)", c.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("postgres not ready after %v: %w", timeout, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Cluster) createDatabase(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.url("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", dbName).Scan(&exists); err != nil || exists {
		return err
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{dbName}.Sanitize())
	return err
}

// URL returns a pgx-compatible connection string for database "tidemark".
func (c *Cluster) URL() string { return c.url(dbName) }

func (c *Cluster) url(db string) string {
	// Slashes are legal in a query; leaving them makes the URL readable.
	host := strings.ReplaceAll(url.QueryEscape(c.runDir), "%2F", "/")
	return fmt.Sprintf("postgres://%s@/%s?host=%s&sslmode=disable", dbUser, db, host)
}

// Stop asks for a fast shutdown (SIGINT: roll back open transactions,
// disconnect clients, checkpoint) and waits for the server to exit,
// escalating to SIGKILL after 30s. Safe to call more than once.
func (c *Cluster) Stop() error { return c.stop(syscall.SIGINT) }

// StopImmediate stops the server as a crash would (SIGQUIT, pg_ctl's
// immediate mode: no checkpoint, open transactions lost), so that Start on
// the same folder recovers from the WAL. Tests use it to prove that what
// was acknowledged had been committed. Stop after it does nothing.
func (c *Cluster) StopImmediate() error { return c.stop(syscall.SIGQUIT) }

func (c *Cluster) stop(sig syscall.Signal) error {
	c.stopOnce.Do(func() {
		select {
		case <-c.exited:
		default:
			fmt.Fprintln(c.log, "stopping PostgreSQL")
			c.cmd.Process.Signal(sig)
			select {
			case <-c.exited:
			case <-time.After(timeout):
				// The whole group, so orphaned backends go too.
				syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
				<-c.exited
				c.stopErr = fmt.Errorf("embedded PostgreSQL did not shut down within %v and was killed; see %s", timeout, filepath.Join(c.dir, "postgres.log"))
			}
		}
	})
	return c.stopErr
}

// findBinaries prefers PATH so users can pick a version explicitly, then
// falls back to the newest Debian-style versioned directory.
func findBinaries() (initdb, postgres string, err error) {
	initdb, err1 := exec.LookPath("initdb")
	postgres, err2 := exec.LookPath("postgres")
	if err1 == nil && err2 == nil {
		return initdb, postgres, nil
	}
	dirs, _ := filepath.Glob(searchGlob)
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, d := range dirs {
		initdb, postgres = filepath.Join(d, "initdb"), filepath.Join(d, "postgres")
		if isExecutable(initdb) && isExecutable(postgres) {
			return initdb, postgres, nil
		}
	}
	return "", "", ErrNoBinaries
}

// versionOf extracts 15 from /usr/lib/postgresql/15/bin, so that 10 sorts
// above 9.6, which a plain string sort would get wrong.
func versionOf(binDir string) int {
	v, _, _ := strings.Cut(filepath.Base(filepath.Dir(binDir)), ".")
	n, _ := strconv.Atoi(v)
	return n
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// postgresUser returns the credentials of the postgres system user, after
// checking that it can reach dir: otherwise initdb fails with a bare
// "Permission denied" that does not say which directory is the problem.
func postgresUser(dir string) (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("embedded PostgreSQL: running as root, so the server must run as the postgres system user, but: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	gids, _ := u.GroupIds()

	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	for p := filepath.Dir(real); ; p = filepath.Dir(p) {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			return nil, err
		}
		if !canTraverse(st, uint32(uid), gids) {
			return nil, fmt.Errorf("embedded PostgreSQL: running as root, so the server runs as the postgres user, which cannot enter %s (mode %o, owner uid %d): run tidemark from another folder, or set DATABASE_URL", p, st.Mode&0o7777, st.Uid)
		}
		if p == "/" {
			break
		}
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func canTraverse(st syscall.Stat_t, uid uint32, gids []string) bool {
	switch {
	case st.Uid == uid:
		return st.Mode&0o100 != 0
	case slices.Contains(gids, strconv.Itoa(int(st.Gid))):
		return st.Mode&0o010 != 0
	default:
		return st.Mode&0o001 != 0
	}
}

// socketInUse reports whether a server is listening on runDir's socket.
// Asking the socket rather than trusting postmaster.pid avoids mistaking a
// recycled PID for a live server; stale files are left to postgres.
func socketInUse(runDir string) bool {
	conn, err := net.DialTimeout("unix", filepath.Join(runDir, ".s.PGSQL."+port), time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

func logOffset(f *os.File) int64 {
	off, _ := f.Seek(0, io.SeekEnd)
	return off
}

// tail returns the last few lines written to path after offset off, so
// errors show this run's complaint rather than an old one.
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
	return strings.Join(lines[max(0, len(lines)-10):], "\n")
}
