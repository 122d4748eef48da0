// Package testlog holds what tests use to read the logs of code under test.
// Only tests import it.
package testlog

import (
	"bytes"
	"log/slog"
	"sync"
)

// Buffer collects log lines written from several goroutines (a server's,
// a store's) for a test to read.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Logger returns a text logger that writes to a new Buffer, and the Buffer.
func Logger() (*slog.Logger, *Buffer) {
	b := &Buffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}
