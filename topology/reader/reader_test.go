package reader

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func write(t *testing.T, p, v string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadValuesAndMissing(t *testing.T) {
	for _, keep := range []bool{false, true} {
		dir := t.TempDir()
		write(t, filepath.Join(dir, "a"), "4: ACTIVE\n")
		files := []*File{NewFile(filepath.Join(dir, "a")), NewFile(filepath.Join(dir, "missing"))}
		// Generous: a regular file on a loaded machine must never look stuck.
		r := New(Options{Timeout: 5 * time.Second, KeepOpen: keep})
		if stuck := r.Read(files, nil); len(stuck) != 0 {
			t.Fatalf("unexpected stuck %v", stuck)
		}
		if got := string(files[0].Value()); got != "4: ACTIVE\n" || files[0].Err != nil {
			t.Fatalf("keep=%v: got %q %v", keep, got, files[0].Err)
		}
		if !errors.Is(files[1].Err, fs.ErrNotExist) {
			t.Fatalf("missing file: %v", files[1].Err)
		}
	}
}

// A kept-open descriptor on a regular file would keep showing the replaced
// inode; the reader must only keep descriptors where told to.
func TestReopenSeesReplacedFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c")
	write(t, p, "1\n")
	f := NewFile(p)
	r := New(Options{})
	r.Read([]*File{f}, nil)
	tmp := p + ".tmp"
	write(t, tmp, "2\n")
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	r.Read([]*File{f}, nil)
	if string(f.Value()) != "2\n" {
		t.Fatalf("got %q", f.Value())
	}
}

// A FIFO blocks open() until a writer appears: the stand-in for a sysfs read
// that hangs in the kernel. The cycle must complete for every other file.
func TestStuckReadIsIsolated(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	write(t, good, "7\n")
	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	files := []*File{NewFile(fifo), NewFile(good)}
	r := New(Options{Timeout: 50 * time.Millisecond, MaxStuck: 2})
	stuck := r.Read(files, nil)
	if len(stuck) != 1 || stuck[0] != files[0] {
		t.Fatalf("stuck = %v", stuck)
	}
	if !errors.Is(files[0].Err, ErrStuck) || string(files[1].Value()) != "7\n" {
		t.Fatalf("fifo err %v, good %q", files[0].Err, files[1].Value())
	}
	// Next cycle: the stuck file is skipped at once, the rest still read.
	if s := r.Read(files, nil); len(s) != 0 || !errors.Is(files[0].Err, ErrStuck) {
		t.Fatalf("second cycle stuck=%v err=%v", s, files[0].Err)
	}
	if r.StuckCount() != 1 {
		t.Fatalf("stuck count %d", r.StuckCount())
	}
	// Release the blocked open by opening the write side, then the file
	// becomes readable again.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("9\n"))
	w.Close()
	for i := 0; r.StuckCount() != 0 && i < 1000; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	if r.StuckCount() != 0 || files[0].Stuck() {
		t.Fatal("stuck read never handed back")
	}
}

func BenchmarkRead13Files(b *testing.B) {
	dir := b.TempDir()
	var files []*File
	for i := 0; i < 13; i++ {
		p := filepath.Join(dir, string(rune('a'+i)))
		os.WriteFile(p, []byte("12345\n"), 0o644)
		files = append(files, NewFile(p))
	}
	r := New(Options{})
	b.ReportAllocs()
	for b.Loop() {
		r.Read(files, nil)
	}
}

// When MaxStuck reads are already stuck, Read waits on the next hung read
// instead of abandoning another goroutine: the poll loop stops progressing
// and the watchdog (not an unbounded pile of blocked goroutines) decides.
func TestStuckReadersAreBounded(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, p := range []string{a, b} {
		if err := unix.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := New(Options{Timeout: 20 * time.Millisecond, MaxStuck: 1})
	fa, fb := NewFile(a), NewFile(b)
	returned := make(chan []*File, 1)
	go func() { returned <- r.Read([]*File{fa, fb}, nil) }()
	// fa becomes stuck (the one allowed); fb then blocks Read itself.
	for i := 0; i < 4000 && r.StuckCount() == 0; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	if r.StuckCount() != 1 {
		t.Fatalf("stuck count %d", r.StuckCount())
	}
	select {
	case <-returned:
		t.Fatal("Read returned while a second read hangs past the bound")
	case <-time.After(200 * time.Millisecond):
	}
	// Release fb alone: while fa is still stuck the bound forbids
	// abandoning fb, so Read can only return by fb's read completing.
	// (Releasing fa first, or both at once, would let a late tick abandon fb
	// legitimately once fa's goroutine had returned and freed the bound.)
	release := func(p string) {
		w, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("1\n"))
		w.Close()
	}
	release(b)
	stuck := <-returned
	// (pread on a FIFO fails with ESPIPE; what matters is that the read of
	// fb completed rather than being abandoned.)
	if len(stuck) != 1 || stuck[0] != fa || errors.Is(fb.Err, ErrStuck) {
		t.Fatalf("stuck %v, fb err %v", stuck, fb.Err)
	}
	release(a)
	for i := 0; i < 4000 && r.StuckCount() != 0; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	if r.StuckCount() != 0 {
		t.Fatalf("fa's read returned but the stuck count stays %d", r.StuckCount())
	}
	r.Close()
}
