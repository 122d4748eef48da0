package table

import (
	"testing"
)

func TestNumbers(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1 000", 5431: "5 431", 1234567: "1 234 567", -1000: "-1 000"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
	if got := MiB(48<<20 + 1); got != "48 MiB" {
		t.Errorf("MiB = %q", got)
	}
}
