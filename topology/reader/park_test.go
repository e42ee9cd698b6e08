package reader

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// simHost is one counter file under a temporary sys directory, and the
// faults a test injects into its reads, passed to the reader at
// construction as the daemon's tests pass theirs.
type simHost struct {
	root, sys, rel, file string
	faults               *tableFaults
}

func newSimHost(t *testing.T) *simHost {
	t.Helper()
	h := &simHost{root: t.TempDir(), rel: "class/infiniband/mlx5_0/ports/1/counters/symbol_error", faults: &tableFaults{}}
	h.sys = filepath.Join(h.root, "sys")
	h.file = filepath.Join(h.sys, h.rel)
	if err := os.MkdirAll(filepath.Dir(h.file), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, h.file, "0\n")
	return h
}

// inject replaces the injected faults: lines of "ERRNO path", the path
// relative to the sys directory, as the simulator's table has them.
func (h *simHost) inject(t *testing.T, lines ...string) {
	t.Helper()
	errs := map[string]unix.Errno{}
	for _, l := range lines {
		name, rel, ok := strings.Cut(l, " ")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		e, ok := errnoNames[name]
		if !ok {
			t.Fatalf("unknown errno %q", name)
		}
		errs[filepath.Join(h.sys, rel)] = e
	}
	h.faults.mu.Lock()
	h.faults.next = errs
	h.faults.mu.Unlock()
}

var errnoNames = map[string]unix.Errno{"EIO": unix.EIO, "EINVAL": unix.EINVAL, "EOPNOTSUPP": unix.EOPNOTSUPP,
	"ENOTSUP": unix.ENOTSUP, "EACCES": unix.EACCES, "EPERM": unix.EPERM, "ENOENT": unix.ENOENT}

// tableFaults is a Faults whose table a test swaps; Refresh takes the
// latest one, as the simulator's file-backed table does.
type tableFaults struct {
	mu   sync.Mutex
	next map[string]unix.Errno
	errs map[string]unix.Errno // read by the worker between Refreshes
}

func (f *tableFaults) Refresh() {
	f.mu.Lock()
	f.errs = f.next
	f.mu.Unlock()
}

func (f *tableFaults) Lookup(path string) (unix.Errno, bool) {
	e, ok := f.errs[path]
	return e, ok
}

// fakeClock drives re-probes without sleeping.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

func newParkReader(h *simHost, reprobe time.Duration) (*Reader, *fakeClock) {
	r := New(Options{Timeout: 5 * time.Second, Faults: h.faults, Reprobe: reprobe})
	c := &fakeClock{now: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	r.clock = c.Now
	return r, c
}

// openCounter counts IN_OPEN events on one file with inotify: the kernel's
// own count of how often the reader opened it.
type openCounter struct{ fd int }

func newOpenCounter(t *testing.T, path string) *openCounter {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatalf("inotify_init1: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_OPEN); err != nil {
		t.Fatalf("inotify_add_watch %s: %v", path, err)
	}
	return &openCounter{fd: fd}
}

// take returns the opens seen since the last call. inotify queues the
// event before open(2) returns, so every open of a finished Read is there.
func (c *openCounter) take(t *testing.T) int {
	t.Helper()
	n := 0
	buf := make([]byte, 4096)
	for {
		k, err := unix.Read(c.fd, buf)
		if err == unix.EAGAIN {
			return n
		}
		if err != nil {
			t.Fatalf("read inotify: %v", err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= k; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if ev.Mask&unix.IN_OPEN != 0 {
				n++
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

func readOne(r *Reader, path string) *File {
	f := NewFile(path)
	r.Read([]*File{f}, nil)
	return f
}

// Three failures in a row with each parking errno park the file: the
// third read's Err is ErrParked wrapping the errno, the fourth cycle does
// not open the file. The 3 is a literal on purpose: the promise is three,
// whatever ParkAfter says.
func TestParking_ThreeFailuresPark(t *testing.T) {
	for _, tc := range []struct {
		name  string
		errno unix.Errno
	}{
		{"EIO", unix.EIO}, {"EINVAL", unix.EINVAL}, {"EOPNOTSUPP", unix.EOPNOTSUPP},
		{"ENOTSUP", unix.ENOTSUP}, {"EACCES", unix.EACCES}, {"EPERM", unix.EPERM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newSimHost(t)
			h.inject(t, tc.name+" "+h.rel)
			r, _ := newParkReader(h, time.Minute)
			opens := newOpenCounter(t, h.file)
			f := NewFile(h.file)
			n := 0
			const parkAfter = 3
			for i := 1; i < parkAfter; i++ {
				r.Read([]*File{f}, nil)
				n += opens.take(t)
				if !errors.Is(f.Err, tc.errno) || errors.Is(f.Err, ErrParked) {
					t.Fatalf("read %d: err %v, want %v and not parked", i, f.Err, tc.errno)
				}
			}
			r.Read([]*File{f}, nil)
			n += opens.take(t)
			if !errors.Is(f.Err, ErrParked) || !errors.Is(f.Err, tc.errno) {
				t.Fatalf("read %d: err %v, want parked on %v", parkAfter, f.Err, tc.errno)
			}
			if e, ok := r.PathParked(h.file); !ok || e != tc.errno || r.ParkedCount() != 1 {
				t.Fatalf("PathParked = %v %v, count %d", e, ok, r.ParkedCount())
			}
			if n != parkAfter {
				t.Fatalf("%d opens in %d failing reads", n, parkAfter)
			}
			r.Read([]*File{f}, nil)
			if !errors.Is(f.Err, ErrParked) {
				t.Fatalf("fourth cycle: %v", f.Err)
			}
			if n := opens.take(t); n != 0 {
				t.Fatalf("fourth cycle opened the parked file %d times", n)
			}
		})
	}
}

// The open count over a parked file's life: three failing opens, none
// while parked, exactly one per re-probe (failed or not), then the file is
// read every cycle again.
func TestParking_OpensCountedWithInotify(t *testing.T) {
	h := newSimHost(t)
	h.inject(t, "EACCES "+h.rel)
	r, clk := newParkReader(h, 10*time.Minute)
	opens := newOpenCounter(t, h.file)
	// A fresh File each cycle, as after a plan rebuild; the opens are
	// drained after every read because inotify merges an event identical
	// to the last one still queued.
	total := 0
	cycle := func() *File {
		f := readOne(r, h.file)
		total += opens.take(t)
		return f
	}
	opened := func() int { n := total; total = 0; return n }
	for i := 0; i < ParkAfter; i++ {
		cycle()
	}
	if n := opened(); n != ParkAfter {
		t.Fatalf("%d opens while failing", n)
	}
	for i := 0; i < 50; i++ {
		clk.now = clk.now.Add(10 * time.Second) // 500 s: short of the 600 s re-probe
		if f := cycle(); !errors.Is(f.Err, ErrParked) {
			t.Fatalf("parked cycle %d: %v", i, f.Err)
		}
	}
	if n := opened(); n != 0 {
		t.Fatalf("parked file opened %d times before its re-probe", n)
	}
	// Re-probe due: one open, still failing, parked for another interval.
	clk.now = clk.now.Add(100 * time.Second)
	for i := 0; i < 20; i++ {
		if f := cycle(); !errors.Is(f.Err, ErrParked) || !errors.Is(f.Err, unix.EACCES) {
			t.Fatalf("after failed re-probe: %v", f.Err)
		}
	}
	if n := opened(); n != 1 {
		t.Fatalf("re-probe opened the file %d times, want 1", n)
	}
	// The restriction is lifted; the next re-probe resumes the file.
	h.inject(t, "# nothing injected")
	clk.now = clk.now.Add(10 * time.Minute)
	f := cycle()
	if f.Err != nil || string(f.Value()) != "0\n" || r.ParkedCount() != 0 {
		t.Fatalf("after re-probe: err %v value %q parked %d", f.Err, f.Value(), r.ParkedCount())
	}
	if n := opened(); n != 1 {
		t.Fatalf("resuming re-probe opened the file %d times, want 1", n)
	}
	for i := 0; i < 3; i++ {
		cycle()
	}
	if n := opened(); n != 3 {
		t.Fatalf("resumed file opened %d times in 3 cycles", n)
	}
}

// A success in the middle ends the streak; a resumed file needs three new
// failures to park again.
func TestParking_SuccessResetsStreak(t *testing.T) {
	h := newSimHost(t)
	r, _ := newParkReader(h, time.Minute)
	fail := func(n int) {
		h.inject(t, "EIO "+h.rel)
		for i := 0; i < n; i++ {
			readOne(r, h.file)
		}
	}
	fail(ParkAfter - 1)
	h.inject(t)
	if f := readOne(r, h.file); f.Err != nil {
		t.Fatal(f.Err)
	}
	fail(ParkAfter - 1)
	if r.ParkedCount() != 0 {
		t.Fatal("parked after a broken streak")
	}
	fail(1)
	if r.ParkedCount() != 1 {
		t.Fatal("not parked after three failures in a row")
	}
}

// A missing file and a hung read are not parking errors: they have their
// own handling (disappearance, read-stuck).
func TestParking_ENOENTAndStuckDoNotPark(t *testing.T) {
	h := newSimHost(t)
	r, _ := newParkReader(h, time.Minute)
	missing := filepath.Join(h.sys, "class/infiniband/mlx5_0/ports/1/counters/gone")
	h.inject(t, "ENOENT "+h.rel)
	for i := 0; i < 2*ParkAfter; i++ {
		for _, p := range []string{missing, h.file} {
			if f := readOne(r, p); !errors.Is(f.Err, fs.ErrNotExist) || errors.Is(f.Err, ErrParked) {
				t.Fatalf("%s: %v", p, f.Err)
			}
		}
	}
	fifo := filepath.Join(h.sys, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	r.SetOptions(Options{Timeout: 20 * time.Millisecond, MaxStuck: 2, Reprobe: time.Minute})
	for i := 0; i < 2*ParkAfter; i++ {
		if f := readOne(r, fifo); !errors.Is(f.Err, ErrStuck) || errors.Is(f.Err, ErrParked) {
			t.Fatalf("fifo: %v", f.Err)
		}
	}
	if r.ParkedCount() != 0 {
		t.Fatalf("parked %d", r.ParkedCount())
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	for i := 0; r.StuckCount() != 0 && i < 1000; i++ {
		time.Sleep(5 * time.Millisecond)
	}
}

// Parking is per path: the Files of a plan rebuilt by a reload, and a
// one-shot ReadFile, see the parking the old plan's File caused.
func TestParking_PerPathAcrossPlansAndReadFile(t *testing.T) {
	h := newSimHost(t)
	h.inject(t, "EOPNOTSUPP "+h.rel)
	r, _ := newParkReader(h, time.Minute)
	old := NewFile(h.file)
	for i := 0; i < ParkAfter; i++ {
		r.Read([]*File{old}, nil)
	}
	opens := newOpenCounter(t, h.file)
	if f := readOne(r, h.file); !errors.Is(f.Err, ErrParked) {
		t.Fatalf("rebuilt plan: %v", f.Err)
	}
	if _, err := r.ReadFile(h.file, 0); !errors.Is(err, ErrParked) || !errors.Is(err, unix.EOPNOTSUPP) {
		t.Fatalf("ReadFile: %v", err)
	}
	if n := opens.take(t); n != 0 {
		t.Fatalf("opened %d times", n)
	}
}

// Without Faults (the production daemon) nothing replaces a read's
// outcome, whatever lies beside the sys directory.
func TestParking_NoFaultsNoInjection(t *testing.T) {
	h := newSimHost(t)
	h.inject(t, "EIO "+h.rel)
	write(t, filepath.Join(h.root, ".nichealth-sim-errno"), "EIO "+h.rel+"\n")
	r := New(Options{Timeout: 5 * time.Second})
	for i := 0; i < 2*ParkAfter; i++ {
		if f := readOne(r, h.file); f.Err != nil || string(f.Value()) != "0\n" {
			t.Fatalf("read %d: %v %q", i, f.Err, f.Value())
		}
	}
}

// A steady cycle on a simulated host with the seam active and nothing
// injected, and a cycle over a parked file, allocate nothing.
func TestParking_ZeroAllocs(t *testing.T) {
	h := newSimHost(t)
	other := filepath.Join(h.sys, "class/infiniband/mlx5_0/ports/1/state")
	write(t, other, "4: ACTIVE\n")
	r, _ := newParkReader(h, time.Minute)
	files := []*File{NewFile(h.file), NewFile(other)}
	if a := testing.AllocsPerRun(20, func() { r.Read(files, nil) }); a != 0 {
		t.Fatalf("%v allocs per cycle with nothing injected", a)
	}
	h.inject(t, "EACCES "+h.rel)
	for i := 0; i < ParkAfter; i++ {
		r.Read(files, nil)
	}
	if a := testing.AllocsPerRun(20, func() { r.Read(files, nil) }); a != 0 {
		t.Fatalf("%v allocs per cycle with a parked file", a)
	}
}

// BenchmarkParking_Read13FilesFaults is BenchmarkRead13Files through a
// Faults with nothing injected: what a test seam costs per read.
func BenchmarkParking_Read13FilesFaults(b *testing.B) {
	sys := b.TempDir()
	var files []*File
	for i := 0; i < 13; i++ {
		p := filepath.Join(sys, string(rune('a'+i)))
		os.WriteFile(p, []byte("12345\n"), 0o644)
		files = append(files, NewFile(p))
	}
	r := New(Options{Faults: &tableFaults{}})
	b.ReportAllocs()
	for b.Loop() {
		r.Read(files, nil)
	}
}

// Lowering the re-probe interval (a reload) brings pending re-probes
// within the new interval.
func TestParking_ShorterReprobeAppliesToParkedFiles(t *testing.T) {
	h := newSimHost(t)
	h.inject(t, "EIO "+h.rel)
	r, clk := newParkReader(h, time.Hour)
	for i := 0; i < ParkAfter; i++ {
		readOne(r, h.file)
	}
	h.inject(t)
	clk.now = clk.now.Add(time.Minute)
	if f := readOne(r, h.file); !errors.Is(f.Err, ErrParked) {
		t.Fatalf("re-probed early: %v", f.Err)
	}
	r.SetOptions(Options{Timeout: 5 * time.Second, Reprobe: 10 * time.Second})
	clk.now = clk.now.Add(10 * time.Second)
	if f := readOne(r, h.file); f.Err != nil {
		t.Fatalf("after the interval was lowered: %v", f.Err)
	}
}
