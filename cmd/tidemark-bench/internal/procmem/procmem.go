// Package procmem reads how much memory a process holds resident, from
// Linux's /proc/PID/status.
package procmem

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Memory is a process's resident memory, in bytes.
type Memory struct {
	Peak, Current int64
}

// Read reads the resident memory of process pid.
func Read(pid int) (Memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	defer f.Close()
	return parseStatus(f)
}

// parseStatus reads VmHWM (peak resident set) and VmRSS, given in kB.
func parseStatus(r io.Reader) (Memory, error) {
	var m Memory
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmHWM" && key != "VmRSS") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(value), "kB")), 10, 64)
		if err != nil {
			return m, fmt.Errorf("%s: %w", key, err)
		}
		if key == "VmHWM" {
			m.Peak = kb << 10
		} else {
			m.Current = kb << 10
		}
	}
	if m.Peak == 0 {
		return m, errors.New("no VmHWM in /proc status")
	}
	return m, sc.Err()
}
