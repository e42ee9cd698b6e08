package overlay

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestIssue40Row2_StatusDumpFIFORefused: a FIFO among the status dumps
// (nothing writes it) is refused with its reason; the map is still drawn
// from the others, and nothing waits on the FIFO.
func TestIssue40Row2_StatusDumpFIFORefused(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "gpu-a017.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gpu-a018.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan []error, 1)
	go func() {
		_, probs, _ := FromStatusDir(dir)
		done <- probs
	}()
	select {
	case probs := <-done:
		joined := ""
		for _, p := range probs {
			joined += p.Error() + "\n"
		}
		if !strings.Contains(joined, "gpu-a017.json is not a regular file") {
			t.Errorf("the FIFO is not refused by name: %q", joined)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a status directory with a FIFO in it did not return")
	}
}
