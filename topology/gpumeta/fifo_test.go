package gpumeta

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestIssue40Row2_MetadataFIFORefused: a gpu_metadata.json that is a
// FIFO (nothing writes it) is refused at once with the reason, not
// waited on: auto mode falls back to sysfs.
func TestIssue40Row2_MetadataFIFORefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "gpu_metadata.json")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Load(p)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "is not a regular file") {
			t.Errorf("a FIFO for metadata: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Load of a FIFO did not return")
	}
}
