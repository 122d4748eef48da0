package memlimit

import (
	"runtime/debug"
	"strings"
	"testing"
)

// Not parallel: the memory limit is the process's.
func TestSet(t *testing.T) {
	before, beforeGC := debug.SetMemoryLimit(-1), debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetMemoryLimit(before); debug.SetGCPercent(beforeGC) })
	gcPercentNow := func() int {
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }

	for _, bad := range []string{"lots", "1KiB", "-5MiB"} {
		if err := Set(bad, env(nil)); err == nil || !strings.Contains(err.Error(), "--memory-limit") {
			t.Errorf("--memory-limit %s: got %v, want an error naming the flag", bad, err)
		}
	}
	if err := Set("64MiB", env(nil)); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != 64<<20 {
		t.Errorf("limit after --memory-limit 64MiB: %d", got)
	}
	if got := gcPercentNow(); got != gcPercent {
		t.Errorf("GOGC under a memory limit: %d, want %d", got, gcPercent)
	}
	debug.SetGCPercent(100)
	if err := Set("64MiB", env(map[string]string{"GOGC": "100"})); err != nil {
		t.Fatal(err)
	}
	if got := gcPercentNow(); got != 100 {
		t.Errorf("GOGC set, yet serve changed it to %d", got)
	}
	if err := Set("32MiB", env(map[string]string{"GOMEMLIMIT": "1GiB"})); err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got != 64<<20 {
		t.Errorf("GOMEMLIMIT set, yet --memory-limit changed the limit to %d", got)
	}
}
