package regularfile

import (
	"io"
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
		go func() { _, err := Read(p, 64); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), p) {
				t.Errorf("Read(%s) = %v, want an error naming it", p, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Read(%s) blocked", p)
		}
	}
	ok := filepath.Join(dir, "ok")
	if err := os.WriteFile(ok, []byte("42\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := Read(ok, 64); err != nil || string(b) != "42\n" {
		t.Fatalf("Read(ok) = %q, %v", b, err)
	}
}

func TestOpen_StreamsRegularFilesWithinTheLimit(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, big, filepath.Join(dir, "missing")} {
		if r, err := Open(p, 64); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("Open(%s) = %v, %v; want an error naming it", p, r, err)
		}
	}
	ok := filepath.Join(dir, "ok")
	if err := os.WriteFile(ok, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Open(ok, 10)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	r.Close()
	if err != nil || string(b) != "0123456789" {
		t.Fatalf("ReadAll = %q, %v", b, err)
	}
	// A file that grows past the limit after the open.
	r, err = Open(ok, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ok, []byte("0123456789abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(r); err == nil || !strings.Contains(err.Error(), "grew") {
		t.Errorf("a grown file: %v", err)
	}
	r.Close()
}
