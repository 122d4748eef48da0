// Package procmem reads how much memory a process holds resident, from
// Linux's /proc/PID/status, and the CPU time it used, from /proc/PID/stat.
package procmem

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
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

// CPU is the CPU time process pid has used (user and system), from
// /proc/PID/stat; 0 where /proc cannot tell.
func CPU(pid int) time.Duration {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	return parseStat(string(raw))
}

// parseStat reads utime and stime, the 12th and 13th fields after the
// command's name (which ends with the last ')'), in clock ticks (100 a
// second).
func parseStat(stat string) time.Duration {
	fields := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	user, _ := strconv.ParseInt(fields[11], 10, 64)
	sys, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(user+sys) * 10 * time.Millisecond
}
