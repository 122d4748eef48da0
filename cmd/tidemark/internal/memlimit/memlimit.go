// Package memlimit sets tidemark serve's soft memory limit and the
// garbage collector's pace that goes with it.
package memlimit

import (
	"fmt"
	"runtime/debug"

	"github.com/tidemark/tidemark/domain"
)

// Default is serve's soft memory limit: the garbage collector works
// harder as the heap nears it, so that the memory taken by a burst
// (bodies, parsed events, a group's batch) goes back to the system rather
// than doubling the heap. It is not a cap: a heap that needs more gets it.
const Default = "48MiB"

// gcPercent is serve's GOGC: the heap may grow to three times what is live
// before a collection, half as many collections as Go's default, as the
// memory limit, not GOGC, is what bounds the heap under a burst.
const gcPercent = 200

// minLimit is the smallest limit serve accepts.
const minLimit = 16 << 20

// Set applies serve's --memory-limit, and with it gcPercent. GOMEMLIMIT
// and GOGC, when set, win: the runtime has already read them, and the
// operator chose them.
func Set(flag string, getenv func(string) string) error {
	if getenv("GOMEMLIMIT") != "" {
		return nil
	}
	if flag == "0" || flag == "off" {
		return nil
	}
	n, err := domain.ParseByteSize(flag)
	if err != nil {
		return fmt.Errorf("--memory-limit (or TIDEMARK_MEMORY_LIMIT): %w", err)
	}
	if n < minLimit {
		return fmt.Errorf("--memory-limit (or TIDEMARK_MEMORY_LIMIT) must be 0 (none) or at least %s; got %s: below that the collector runs all the time",
			domain.FormatByteSize(minLimit), flag)
	}
	debug.SetMemoryLimit(n)
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	return nil
}
