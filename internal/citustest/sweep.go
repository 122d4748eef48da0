package citustest

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A cluster's folder holds ownerFile, the pid of the process that made it.
// A process that dies without Stop (a test binary ends with no hook after
// its last test, or is killed) leaves its folder behind, some hundreds of
// MB, and its servers stop on their own (Pdeathsig). Sweep removes such
// folders; New runs it first, so each run clears what the last one left.
const (
	folderPrefix = "tidemark-citus-"
	ownerFile    = "owner.pid"
	// A folder without an owner file yet may be one New is making now.
	ownerGrace = time.Minute
)

// writeOwner records this process as the owner of folder dir.
func writeOwner(dir string) error {
	return os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644)
}

// Sweep removes the cluster folders under the temporary directory whose
// owner has exited, after an immediate shutdown of any server still
// running there, and writes a line for each to log.
func Sweep(log io.Writer) error {
	dirs, err := filepath.Glob(filepath.Join(os.TempDir(), folderPrefix+"*"))
	if err != nil {
		return err
	}
	var errs []error
	for _, dir := range dirs {
		if !abandoned(dir) {
			continue
		}
		for _, n := range []string{"coordinator", "worker1", "worker2"} {
			if pid := pidIn(filepath.Join(dir, n, "postmaster.pid")); pid > 0 {
				syscall.Kill(pid, syscall.SIGQUIT) // gone already, most often
			}
		}
		time.Sleep(100 * time.Millisecond)
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(log, "removed %s, left by a process that has exited\n", dir)
	}
	return errors.Join(errs...)
}

// abandoned reports whether dir's owner has exited.
func abandoned(dir string) bool {
	owner := pidIn(filepath.Join(dir, ownerFile))
	if owner == 0 {
		info, err := os.Stat(dir)
		return err == nil && time.Since(info.ModTime()) > ownerGrace
	}
	return !alive(owner)
}

// pidIn reads the pid on the first line of file, or 0.
func pidIn(file string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	return pid
}

// alive reports whether process pid exists (EPERM: it does, as another user's).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
