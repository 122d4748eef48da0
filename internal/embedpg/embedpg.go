// Package embedpg runs a private PostgreSQL cluster for `tidemark serve`
// when no DATABASE_URL is given, so a first-time user gets a working
// server without setting up a database by hand.
//
// The cluster lives entirely under one directory, readable by its owner
// only, and listens only on a Unix socket inside it, so it cannot clash
// with (or be reached through) any system-wide PostgreSQL on TCP port 5432,
// nor be reached by other users of the machine. Run as root from a folder
// the postgres user cannot enter, its data and socket live in a folder of
// their own under /var/lib/tidemark instead (clusterBase).
package embedpg

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	"unicode"

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
	logPath := filepath.Join(dir, "postgres.log")
	if err := privateDir(dir); err != nil {
		return nil, err
	}

	// initdb and postgres refuse to run as root, so drop to the postgres
	// system user and hand it the directories it must write to. When it
	// cannot enter dir (a private home or project folder), the cluster
	// lives where it can (relocated), and dir keeps the rest.
	base := dir // holds pgdata and run
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		if base, cred, err = clusterBase(dir, log); err != nil {
			return nil, err
		}
	}
	pgdata := filepath.Join(base, "pgdata")
	runDir := filepath.Join(base, "run")

	// Checked up front: postgres would only say "could not create Unix
	// socket", which does not tell the user that the path is too long.
	if sock := filepath.Join(runDir, ".s.PGSQL."+port); len(sock) > maxSocketPath {
		return nil, fmt.Errorf("embedded PostgreSQL: socket path %s is %d bytes, over the Unix limit of %d: run tidemark from a folder with a shorter path, or set DATABASE_URL", sock, len(sock), maxSocketPath)
	}

	// Only the owner may enter the cluster's folders: the socket accepts
	// anyone who reaches it (trust auth), and the folder holds the
	// encryption key of provider secrets. Folders made by an earlier
	// version with wider modes are narrowed.
	for _, d := range []string{base, runDir, pgdata} {
		if err := privateDir(d); err != nil {
			return nil, err
		}
		if cred != nil {
			if err := os.Chown(d, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, err
			}
		}
	}
	if base != dir {
		// Commands other than serve find the running cluster's socket
		// under dir/run (cmd/tidemark's openDatabase).
		if err := linkRunDir(filepath.Join(dir, "run"), runDir); err != nil {
			return nil, err
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
		cmd.Dir, cmd.Stdout, cmd.Stderr = base, logFile, logFile
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
	cmd.Dir, cmd.Stdout, cmd.Stderr = base, logFile, logFile
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

// relocateRoot holds, one folder each, the clusters of folders that the
// postgres user cannot enter. A variable so tests can point it elsewhere.
var relocateRoot = "/var/lib/tidemark"

// clusterBase is, when running as root, the folder that holds dir's
// cluster (its pgdata and run folders), and the postgres user's
// credentials. It is dir itself when the postgres user can enter it, or
// when the cluster's data is there already (it stays where it is). When
// it cannot, the cluster lives in a folder of its own under
// relocateRoot, named after dir's path so that every start from dir finds
// the same data; so does a cluster relocated at an earlier start.
func clusterBase(dir string, log io.Writer) (string, *syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return "", nil, fmt.Errorf("embedded PostgreSQL: running as root, so the server must run as the postgres system user, but: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	gids, _ := u.GroupIds()
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", nil, err
	}
	blocked, st, err := untraversable(real, uint32(uid), gids)
	if err != nil {
		return "", nil, err
	}
	if exists(filepath.Join(dir, "pgdata", "PG_VERSION")) {
		if blocked != "" {
			return "", nil, fmt.Errorf("embedded PostgreSQL: running as root, so the server runs as the postgres user, which cannot enter %s (mode %o, owner uid %d), where the cluster's data is (%s): let it (chmod o+x %s), or set DATABASE_URL", blocked, st.Mode&0o7777, st.Uid, filepath.Join(dir, "pgdata"), blocked)
		}
		return dir, cred, nil
	}
	alt := filepath.Join(relocateRoot, relocatedName(real))
	if blocked == "" && !exists(filepath.Join(alt, "pgdata", "PG_VERSION")) {
		return dir, cred, nil
	}
	if err := ownRoot(relocateRoot); err != nil {
		return "", nil, err
	}
	if p, st, err := untraversable(alt, uint32(uid), gids); err != nil || p != "" {
		if err == nil {
			err = fmt.Errorf("the postgres user cannot enter %s (mode %o, owner uid %d)", p, st.Mode&0o7777, st.Uid)
		}
		return "", nil, fmt.Errorf("embedded PostgreSQL: running as root, so the server runs as the postgres user, which cannot enter %s; nor can its cluster live in %s: %w; set DATABASE_URL", dir, alt, err)
	}
	if err := privateDir(alt); err != nil {
		return "", nil, err
	}
	// Says which folder the data belongs to, to whoever looks in relocateRoot.
	if err := os.WriteFile(filepath.Join(alt, "folder"), []byte(dir+"\n"), 0o600); err != nil {
		return "", nil, err
	}
	// An empty pgdata left by a start that refused, before relocation.
	os.Remove(filepath.Join(dir, "pgdata"))
	why := "made when the postgres user could not enter " + dir
	if blocked != "" {
		why = fmt.Sprintf("the postgres user, which runs it, cannot enter %s", blocked)
	}
	fmt.Fprintf(log, "the embedded PostgreSQL cluster of %s lives in %s (%s); its data stays there across restarts\n", dir, alt, why)
	return alt, cred, nil
}

// relocatedName is the name of dir's folder under relocateRoot: its
// parent's name, for people, and a hash of its path, so that two folders
// never share one and the socket path stays short.
func relocatedName(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	name := strings.Map(func(r rune) rune {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '.') {
			return r
		}
		return '-'
	}, filepath.Base(filepath.Dir(dir)))
	name = strings.Trim(name, ".-")
	if len(name) > 24 {
		name = name[:24]
	}
	return strings.TrimLeft(name+"-", "-") + hex.EncodeToString(sum[:6])
}

// ownRoot makes relocateRoot, enterable by all and writable by root only,
// and refuses one that another user could have prepared: a symlink, or a
// folder root does not own alone.
func ownRoot(root string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("embedded PostgreSQL: %w; set DATABASE_URL", err)
	}
	fi, err := os.Lstat(root)
	if err != nil {
		return err
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || st == nil || st.Uid != 0 || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("embedded PostgreSQL: %s must be a folder owned and writable by root only (mode %v): fix it, or set DATABASE_URL", root, fi.Mode())
	}
	return nil
}

// untraversable returns the first folder above path (its ancestors, from
// the nearest) that the user uid of groups gids cannot enter, with its
// stat; "" when it can reach path. Checked because initdb fails with a
// bare "Permission denied" that does not say which folder is the problem.
func untraversable(path string, uid uint32, gids []string) (string, syscall.Stat_t, error) {
	for p := filepath.Dir(path); ; p = filepath.Dir(p) {
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			return "", st, err
		}
		if !canTraverse(st, uid, gids) {
			return p, st, nil
		}
		if p == "/" {
			return "", st, nil
		}
	}
}

// privateDir makes d, or narrows it, to its owner's alone.
func privateDir(d string) error {
	if err := os.MkdirAll(d, 0o700); err != nil {
		return err
	}
	return os.Chmod(d, 0o700)
}

// linkRunDir makes link, dir's run folder, a symlink to the relocated
// cluster's, replacing an empty folder left by a start that refused.
func linkRunDir(link, target string) error {
	if cur, err := os.Readlink(link); err == nil && cur == target {
		return nil
	}
	if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("embedded PostgreSQL: %s should link to %s, where the cluster's socket is: %w", link, target, err)
	}
	return os.Symlink(target, link)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
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
