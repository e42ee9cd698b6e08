package persist

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/internal/hangfs"
)

// The expected inventory outlives a reboot in a file of its own: written
// atomically, only when it changed, read back bounded, and an unusable one
// refused with its name and set aside.
func TestCrossBootFile_SaveLoadQuarantine(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "inventory.json")
	f := NewCrossBootFile(p)
	f.wait = time.Minute // a loaded machine's fsync is not what this tests
	if b, err := f.Load(); b != nil || err != nil {
		t.Fatalf("no file: %q %v", b, err)
	}
	if w, err := f.SaveIfChanged([]byte(`{"version":1}`)); !w || err != nil {
		t.Fatalf("first save %v %v", w, err)
	}
	if w, err := f.SaveIfChanged([]byte(`{"version":1}`)); w || err != nil {
		t.Fatalf("unchanged save wrote: %v %v", w, err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file %v %v", fi, err)
	}
	g := NewCrossBootFile(p)
	if b, err := g.Load(); string(b) != `{"version":1}` || err != nil {
		t.Fatalf("load %q %v", b, err)
	}
	if w, _ := g.SaveIfChanged([]byte(`{"version":1}`)); w {
		t.Fatal("saving what was loaded wrote")
	}
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewCrossBootFile(p).Load(); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("a FIFO read as the file: %v", err)
	}
	if q := NewCrossBootFile(p).Quarantine(); q != p+CorruptSuffix {
		t.Fatalf("quarantined to %q", q)
	}
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Fatalf("still there: %v", err)
	}
}

// A save that cannot be written leaves the previous file whole and says
// how to fix it.
func TestCrossBootFile_FailedSaveKeepsThePrevious(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "inventory.json")
	if _, err := NewCrossBootFile(p).SaveIfChanged([]byte("{}")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("save into a missing directory: %v", err)
	}
}

// Issue 32 row 4: the expected inventory is saved by a check on the poll
// loop, and a write to a hung state directory held the loop with it. A
// save that does not return in time goes on in the background: the
// caller gets an error at once, later saves too while the write hangs
// (no second write is started), and once the filesystem answers the
// file holds what was asked and the next save of it writes nothing.
func TestBounded_4_CrossBootSaveDoesNotWaitOnAHungWrite(t *testing.T) {
	fs := hangfs.Mount(t)
	p := filepath.Join(fs.Dir, "inventory.json")
	f := NewCrossBootFile(p)
	f.wait = time.Minute
	if w, err := f.SaveIfChanged([]byte("one\n")); !w || err != nil {
		t.Fatalf("first save %v %v", w, err)
	}
	f.wait = crossBootWriteWait
	fs.Hang(false, true)
	for i := 0; i < 3; i++ {
		if w, err := f.SaveIfChanged([]byte("two\n")); w || err == nil || !strings.Contains(err.Error(), "has not returned") {
			t.Fatalf("save %d on a hung filesystem: %v %v", i, w, err)
		}
	}
	if n := fs.Hung(); n != 1 {
		t.Fatalf("%d writes hang, want the one", n)
	}
	fs.Release()
	for {
		w, err := f.SaveIfChanged([]byte("two\n"))
		if err == nil {
			if w {
				t.Fatal("the write that hung was made again")
			}
			break
		}
		time.Sleep(10 * time.Millisecond) // until the released write returns
	}
	if b, err := os.ReadFile(filepath.Join(fs.Backing, "inventory.json")); err != nil || string(b) != "two\n" {
		t.Fatalf("file %q %v", b, err)
	}
}
