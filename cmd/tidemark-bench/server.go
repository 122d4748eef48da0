package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// serverProcess is the receiver running as a child process: the real
// tidemark binary, built from this source tree, as it runs in production.
type serverProcess struct {
	cmd     *exec.Cmd
	base    string
	binDir  string // holds the built binary; removed by stop
	logPath string
	logFile *os.File
	exited  chan struct{}
	waitErr error
}

// tidemarkModule is the product's module; the bench module's replace
// directive (or the workspace) points it at this source tree.
const tidemarkModule = "github.com/tidemark/tidemark"

// startServer builds tidemark, runs its serve command on a free local port
// against dbURL with key and extra flags, and waits until /readyz answers.
// It returns an error naming the server log when the server does not get
// ready.
func startServer(ctx context.Context, dbURL string, key []byte, log io.Writer, extra ...string) (*serverProcess, error) {
	return startServerEnv(ctx, dbURL, key, nil, log, extra...)
}

// startServerEnv is startServer with env added to the server's environment
// (such as OTEL_EXPORTER_OTLP_ENDPOINT).
func startServerEnv(ctx context.Context, dbURL string, key []byte, env []string, log io.Writer, extra ...string) (*serverProcess, error) {
	binDir, err := os.MkdirTemp("", "tidemark-bench-bin-*")
	if err != nil {
		return nil, err
	}
	exe := filepath.Join(binDir, "tidemark")
	if err := buildTidemark(ctx, exe, log); err != nil {
		os.RemoveAll(binDir)
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		os.RemoveAll(binDir)
		return nil, err
	}
	logFile, err := os.CreateTemp("", "tidemark-bench-serve-*.log")
	if err != nil {
		os.RemoveAll(binDir)
		return nil, err
	}
	// The public URL is the address the bench calls, whatever the caller's
	// TIDEMARK_PUBLIC_URL: HubSpot signatures cover it.
	// /metrics on --addr, which the bench scrapes (--metrics-addr empty).
	cmd := exec.Command(exe, append([]string{"serve", "--addr", addr, "--public-url", "http://" + addr, "--metrics-addr="}, extra...)...)
	cmd.Env = append(tidemarkEnv(dbURL, key), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		os.RemoveAll(binDir)
		return nil, fmt.Errorf("start server: %w", err)
	}
	p := &serverProcess{cmd: cmd, base: "http://" + addr, binDir: binDir, logPath: logFile.Name(), logFile: logFile, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	if err := p.waitReady(ctx, 30*time.Second); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// buildTidemark builds the product's command to exe with the go command,
// in the folder of the tidemark module this bench is built against, so the
// server under test is the same code as the bench's own imports of it.
func buildTidemark(ctx context.Context, exe string, log io.Writer) error {
	list := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", tidemarkModule)
	out, err := list.Output()
	if err != nil {
		return fmt.Errorf("find the %s source tree (run tidemark-bench inside it, with the go command on PATH): go list -m: %w%s",
			tidemarkModule, err, exitStderr(err))
	}
	root := strings.TrimSpace(string(out))
	fmt.Fprintf(log, "building the server under test: go build -o %s ./cmd/tidemark (in %s)\n", exe, root)
	build := exec.CommandContext(ctx, "go", "build", "-o", exe, "./cmd/tidemark")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build tidemark: %w\n%s", err, out)
	}
	return nil
}

// webhookURL is where the deliveries of the bench tenant's provider go.
func (p *serverProcess) webhookURL(provider string) string {
	return p.tenantWebhookURL(benchTenant, provider)
}

// tenantWebhookURL is where the deliveries of tenant's provider go.
func (p *serverProcess) tenantWebhookURL(tenant, provider string) string {
	return p.base + "/webhooks/" + tenant + "/" + provider
}

// tidemarkEnv is the environment of a tidemark process on dbURL with key,
// whatever the caller's own database, key, queue and tracing.
func tidemarkEnv(dbURL string, key []byte) []string {
	return append(withoutEnv(os.Environ(), "DATABASE_URL", "TIDEMARK_ENCRYPTION_KEY", "TIDEMARK_QUEUE", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED"),
		"DATABASE_URL="+dbURL, "TIDEMARK_ENCRYPTION_KEY="+base64.StdEncoding.EncodeToString(key))
}

// runCLI runs a command of the built tidemark binary on the server's
// database and returns the last line it printed (where tidemark prints
// tokens and secrets).
func (p *serverProcess) runCLI(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, p.exe(), args...)
	cmd.Env = p.cmd.Env
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("tidemark %s: %w%s", strings.Join(args, " "), err, exitStderr(err))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

// exe is the built tidemark binary.
func (p *serverProcess) exe() string { return filepath.Join(p.binDir, "tidemark") }

// waitReady polls /readyz until it answers 200, the child exits, or the
// timeout passes.
func (p *serverProcess) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := client.Get(p.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("server exited before it was ready (%v); server log: %s", p.waitErr, p.logPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server not ready after %s; server log: %s", timeout, p.logPath)
		}
	}
}

// stop asks the server to shut down gracefully, and kills it if it has not
// within 15 seconds.
func (p *serverProcess) stop() {
	defer os.RemoveAll(p.binDir)
	defer p.logFile.Close()
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}
