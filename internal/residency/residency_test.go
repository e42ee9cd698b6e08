package residency

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

const sampleMaps = `00400000-00c1b000 r-xp 00000000 fd:01 1311 /usr/sbin/nichealthd
00c1b000-01596000 r--p 0081b000 fd:01 1311 /usr/sbin/nichealthd
01596000-015d0000 rw-p 01196000 fd:01 1311 /usr/sbin/nichealthd
015d0000-01610000 rw-p 00000000 00:00 0
c000000000-c000400000 rw-p 00000000 00:00 0
7f3a1c000000-7f3a1c021000 rw-p 00000000 00:00 0
7ffd2b9e2000-7ffd2ba03000 rw-p 00000000 00:00 0                          [stack]
00400000-zz r-xp 00000000 fd:01 1311 /usr/sbin/nichealthd
00c1b001-00c1c000 r--p 0081b000 fd:01 1311 /usr/sbin/nichealthd
01000000-00f00000 r--p 0081b000 fd:01 1311 /usr/sbin/nichealthd
00400000-00c1b000 r-xp 00000000 fd:01 1312 /usr/sbin/nichealthd (deleted)
`

// The executable's mappings are found by path and nothing else is taken:
// anonymous memory, the stack, a malformed or unaligned line, another
// file.
func TestExecutable_OnlyTheExecutablesMappings(t *testing.T) {
	got := Executable([]byte(sampleMaps), "/usr/sbin/nichealthd")
	want := []Range{{0x400000, 0xc1b000}, {0xc1b000, 0x1596000}, {0x1596000, 0x15d0000}}
	if len(got) != len(want) {
		t.Fatalf("got %d ranges %x, want %x", len(got), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("range %d = %x, want %x", i, got[i], want[i])
		}
	}
	if d := Executable([]byte(sampleMaps), "/usr/sbin/nichealthd (deleted)"); len(d) != 1 {
		t.Errorf("a path with a space: %x", d)
	}
}

func rssFile(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "RssFile:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("RssFile %q: %v", v, err)
			}
			return n
		}
	}
	t.Skip("this kernel's /proc/self/status has no RssFile (before Linux 4.5)")
	return 0
}

// Release on this test binary, a real process on the real kernel: the
// executable's file-backed resident pages go, and the process runs on
// (this test keeps running code of the binary after it).
func TestRelease_ReclaimsTheExecutablesPages(t *testing.T) {
	before := rssFile(t)
	n, err := Release()
	if err == ErrUnsupported {
		t.Skipf("%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no mapping of the executable was advised")
	}
	after := rssFile(t)
	if after >= before {
		t.Fatalf("RssFile %d kB before, %d kB after: nothing reclaimed", before, after)
	}
	t.Logf("RssFile %d kB → %d kB (%d kB of mappings advised)", before, after, n/1024)
}

func FuzzExecutable(f *testing.F) {
	f.Add([]byte(sampleMaps), "/usr/sbin/nichealthd")
	f.Add([]byte("0-1000 r-xp 0 0:0 0 x\n"), "x")
	f.Fuzz(func(t *testing.T, maps []byte, exe string) {
		for _, r := range Executable(maps, exe) {
			if r.End <= r.Start || r.Start%uintptr(os.Getpagesize()) != 0 {
				t.Fatalf("bad range %x", r)
			}
		}
	})
}
