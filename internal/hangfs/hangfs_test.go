package hangfs

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The filesystem passes files through, and hangs reads and writes only
// between Hang and Release.
func TestHangfs_HangsOnCommandAndReleases(t *testing.T) {
	h := Mount(t)
	p := filepath.Join(h.Dir, "f")
	if err := os.WriteFile(p, []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(h.Backing, "f")); err != nil || string(b) != "one\n" {
		t.Fatalf("backing file %q %v", b, err)
	}
	for _, write := range []bool{true, false} {
		h.Hang(!write, write)
		done := make(chan error, 1)
		go func() {
			if write {
				f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
				if err == nil {
					_, err = f.Write([]byte("two\n"))
					f.Close()
				}
				done <- err
				return
			}
			_, err := os.ReadFile(p)
			done <- err
		}()
		for h.Hung() == 0 {
			select {
			case err := <-done:
				t.Fatalf("write=%v finished while hanging: %v", write, err)
			case <-time.After(10 * time.Millisecond):
			}
		}
		h.Release()
		if err := <-done; err != nil {
			t.Fatalf("write=%v after release: %v", write, err)
		}
	}
	if b, _ := os.ReadFile(p); string(b) != "one\ntwo\n" {
		t.Fatalf("content %q", b)
	}
}
