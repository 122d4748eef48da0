package main

import (
	"errors"
	"net"
	"os/exec"
	"slices"
	"strings"
)

// What the bench needs to run other programs: a free port for a child,
// its environment, and what a failed command said.

// exitStderr is what a failed command's Output kept of its stderr.
func exitStderr(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) && len(exit.Stderr) > 0 {
		return "\n" + strings.TrimSpace(string(exit.Stderr))
	}
	return ""
}

// freeAddr asks the kernel for a free port. Another process could take it
// before the child listens; the readiness wait would then report the error.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// withoutEnv is env without the variables names.
func withoutEnv(env []string, names ...string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(names, name)
	})
}
