package persist

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

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
