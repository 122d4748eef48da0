package procmem

import (
	"strings"
	"testing"
)

func TestParseStatus(t *testing.T) {
	t.Parallel()
	m, err := parseStatus(strings.NewReader("Name:\ttidemark\nVmPeak:\t 1000 kB\nVmHWM:\t   49152 kB\nVmRSS:\t   40960 kB\n"))
	if err != nil || m.Peak != 48<<20 || m.Current != 40<<20 {
		t.Fatalf("parseStatus = %+v, %v", m, err)
	}
	if _, err := parseStatus(strings.NewReader("Name:\tx\n")); err == nil {
		t.Fatal("parseStatus accepted a status without VmHWM")
	}
}
