package citustest

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestSweep removes the folder of a cluster whose owner has exited, and
// keeps a live owner's and one being made (no owner file yet).
func TestSweep(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	folder := func(name string, owner int) string {
		dir := filepath.Join(tmp, folderPrefix+name)
		if err := os.MkdirAll(filepath.Join(dir, "coordinator"), 0o755); err != nil {
			t.Fatal(err)
		}
		if owner > 0 {
			if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(owner)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	dead, live, making := folder("dead", exited.Process.Pid), folder("live", os.Getpid()), folder("making", 0)
	if err := Sweep(io.Discard); err != nil {
		t.Fatal(err)
	}
	for dir, want := range map[string]bool{dead: false, live: true, making: true} {
		if _, err := os.Stat(dir); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", filepath.Base(dir), err == nil, want)
		}
	}
}
