package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// child is a process the queue bench started: a NATS server or a worker.
type child struct {
	cmd     *exec.Cmd
	url     string // a NATS server's client URL
	logPath string
	logFile *os.File
	exited  chan struct{}
}

// startBenchNATS runs a NATS server with JetStream on a free port, its
// store under dir; syncAlways makes it sync every write to disk
// (sync_interval: always) instead of every two minutes.
func startBenchNATS(ctx context.Context, exe, dir string, syncAlways bool) (*child, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf("listen: %q\njetstream {\n  store_dir: %q\n", addr, filepath.Join(dir, "jetstream"))
	if syncAlways {
		conf += "  sync_interval: always\n"
	}
	conf += "}\n"
	confPath := filepath.Join(dir, "nats-server.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	c, err := startProcess(exec.Command(exe, "-c", confPath), filepath.Join(dir, "nats-server.log"))
	if err != nil {
		return nil, err
	}
	c.url = "nats://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; {
		if conn, err := net.Dial("tcp", addr); err == nil {
			conn.Close()
			return c, nil
		}
		select {
		case <-c.exited:
			return nil, fmt.Errorf("nats-server exited; its log: %s", c.logPath)
		case <-ctx.Done():
			c.stop()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.stop()
			return nil, fmt.Errorf("nats-server did not listen within 30 s; its log: %s", c.logPath)
		}
	}
}

// startWorker runs `tidemark worker` with queueFlags on db, logging to
// logPath, and waits until it consumes.
func startWorker(exe string, db receiverDatabase, queueFlags []string, logPath string) (*child, error) {
	cmd := exec.Command(exe, append([]string{"worker"}, queueFlags...)...)
	cmd.Env = tidemarkEnv(db.url, db.key)
	c, err := startProcess(cmd, logPath)
	if err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if b, _ := os.ReadFile(c.logPath); strings.Contains(string(b), "Tidemark worker is consuming") {
			return c, nil
		}
		select {
		case <-c.exited:
			return nil, fmt.Errorf("worker exited; its log: %s", c.logPath)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.stop()
			return nil, fmt.Errorf("worker did not start within 30 s; its log: %s", c.logPath)
		}
	}
}

// startProcess starts cmd with its output appended to logPath.
func startProcess(cmd *exec.Cmd, logPath string) (*child, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	c := &child{cmd: cmd, logPath: logPath, logFile: f, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(c.exited) }()
	return c, nil
}

// stop ends the process with SIGTERM, or SIGKILL after 15 s.
func (c *child) stop() {
	defer c.logFile.Close()
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(15 * time.Second):
		c.cmd.Process.Kill()
		<-c.exited
	}
}
