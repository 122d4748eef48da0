// Package procs holds what the bench needs to run other programs: a free
// port for a child, its environment, and what a failed command said.
package procs

import (
	"errors"
	"net"
	"os/exec"
	"slices"
	"strings"
)

// ExitStderr is what a failed command's Output kept of its stderr.
func ExitStderr(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) && len(exit.Stderr) > 0 {
		return "\n" + strings.TrimSpace(string(exit.Stderr))
	}
	return ""
}

// FreeAddr asks the kernel for a free port. Another process could take it
// before the child listens; the readiness wait would then report the error.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// WithoutEnv is env without the variables names.
func WithoutEnv(env []string, names ...string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(names, name)
	})
}
