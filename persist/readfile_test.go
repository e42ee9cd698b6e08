package persist

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadRegular_RefusesFIFODevZeroAndOversize: files under the state
// directory are read only when regular and small; a FIFO does not block.
func TestReadRegular_RefusesFIFODevZeroAndOversize(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, zero, big} {
		done := make(chan error, 1)
		go func() { _, err := ReadRegular(p, 64); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), p) {
				t.Errorf("ReadRegular(%s) = %v, want an error naming it", p, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("ReadRegular(%s) blocked", p)
		}
	}
	ok := filepath.Join(dir, "ok")
	if err := os.WriteFile(ok, []byte("42\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadRegular(ok, 64); err != nil || string(b) != "42\n" {
		t.Fatalf("ReadRegular(ok) = %q, %v", b, err)
	}
}

// TestLoad_FIFOStateFileIsSetAsideNotWaitedOn: a FIFO where the state file
// belongs would block start-up forever; it is treated as an unusable file.
func TestLoad_FIFOStateFileIsSetAsideNotWaitedOn(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state.json")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan LoadStatus, 1)
	go func() { _, st, _ := Load(p); done <- st }()
	select {
	case st := <-done:
		if st != LoadCorrupt {
			t.Fatalf("status %v, want %v", st, LoadCorrupt)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Load blocked on a FIFO")
	}
}
