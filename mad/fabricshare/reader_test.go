package fabricshare

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/internal/syncbuf"
	"github.com/nichealth/nichealthd/mad"
	"github.com/nichealth/nichealthd/mad/wire"
)

// fakeFabric answers as a fabric of switches by LID would. The helper
// itself runs in the lab tests (cmd/nichealthd); here the reader's own
// rules are pinned: what it asks, how often, what it keeps.
type fakeFabric struct {
	mu       sync.Mutex
	nodes    map[int]string // LID -> node GUID
	cpi      wire.ClassPortInfo
	sym      uint64
	calls    map[string]int
	portsErr error
	// helperErr fails every NodeInfo as a helper that is not running.
	helperErr error
	// numPorts is every switch's port count (41 when 0).
	numPorts int
	// pcErr and pcxErr fail every PortCounters, PortCountersExtended.
	pcErr, pcxErr error
}

func newFabric() *fakeFabric {
	return &fakeFabric{nodes: map[int]string{1: "0xb83fd20300a01000", 2: "0xb83fd20300a02000"}, calls: map[string]int{},
		cpi: wire.ClassPortInfo{CapMask: wire.CapExtWidth, CapMask2: wire.Cap2AddlPortCountersX}}
}

func (f *fakeFabric) note(op string) {
	f.mu.Lock()
	f.calls[op]++
	f.mu.Unlock()
}

func (f *fakeFabric) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *fakeFabric) Ports(context.Context, time.Duration) ([]wire.LocalPort, error) {
	f.note("ports")
	return []wire.LocalPort{
		{CA: "mlx5_0", Port: 1, GUID: "0xa088c20300ab0001", State: 1, LinkLayer: "InfiniBand"},
		{CA: "mlx5_1", Port: 1, GUID: "0xa088c20300ab0002", LID: 11, State: 4, LinkLayer: "InfiniBand"},
	}, f.portsErr
}

func (f *fakeFabric) NodeInfo(_ context.Context, l wire.Local, lid int, _ time.Duration) (wire.Node, error) {
	f.note("nodeinfo")
	f.note(fmt.Sprint("nodeinfo of ", lid))
	f.note("from " + l.GUID)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.helperErr != nil {
		return wire.Node{}, f.helperErr
	}
	g, ok := f.nodes[lid]
	if !ok {
		return wire.Node{}, &wire.Error{Kind: wire.ErrTimeout, Msg: fmt.Sprintf("NodeInfo of LID %d: no answer within 1000 ms", lid)}
	}
	typ := 2
	if strings.HasPrefix(g, "0xa0") {
		typ = 1
	}
	n := f.numPorts
	if n == 0 {
		n = 41
	}
	return wire.Node{NodeGUID: g, NodeType: typ, NumPorts: n}, nil
}

func (f *fakeFabric) ClassPortInfo(context.Context, wire.Local, int, time.Duration) (wire.ClassPortInfo, error) {
	f.note("cpi")
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cpi, nil
}

func (f *fakeFabric) PortCounters(_ context.Context, _ wire.Local, lid, port int, _ time.Duration) (wire.PortCounters, error) {
	f.note("pc")
	f.mu.Lock()
	defer f.mu.Unlock()
	return wire.PortCounters{SymbolErrorCounter: f.sym, PortXmitData: uint64(lid*1000 + port)}, f.pcErr
}

func (f *fakeFabric) PortCountersExt(_ context.Context, _ wire.Local, lid, port int, withErrors bool, _ time.Duration) (wire.PortCountersExt, error) {
	f.note("pcx")
	f.mu.Lock()
	defer f.mu.Unlock()
	x := wire.PortCountersExt{PortXmitData: 1 << 40, PortRcvData: uint64(lid*1000 + port)}
	if withErrors {
		x.Errors = &wire.PortCounters{SymbolErrorCounter: f.sym + 1<<33, PortXmitData: 1 << 40}
	}
	return x, f.pcxErr
}

func (f *fakeFabric) State() mad.State { return mad.State{Health: mad.Running} }
func (f *fakeFabric) Close() error     { return nil }

func writeFile(t testing.TB, path, body string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls the published reading until ok holds.
func waitFor(t *testing.T, r *ShareReader, what string, ok func(*ShareReading) bool) *ShareReading {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rd := r.Latest()
		if ok(rd) {
			return rd
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: never; last reading %+v", what, rd)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func portOf(rd *ShareReading, guid string, port int) *SharePort {
	for _, p := range rd.Ports {
		if p.SwitchGUID == guid && p.Port == port {
			return p
		}
	}
	return nil
}

func start(t *testing.T, f *fakeFabric, path string, interval time.Duration) *ShareReader {
	t.Helper()
	r := StartShareReader(ShareConfig{Assignment: path, Host: "gpu-a017", Interval: interval, Timeout: time.Second}, f, nil)
	t.Cleanup(r.Close)
	return r
}

// Every port of the list is read, from the ACTIVE local port; each
// switch's LID is checked once per round before its ports are read, its
// PMA's offer asked once, and the 64-bit error counters kept.
func TestReader_ReadsEachPortCheckingEachSwitchOnce(t *testing.T) {
	t.Parallel()
	f := newFabric()
	path := filepath.Join(t.TempDir(), "share.json")
	writeFile(t, path, goodFile)
	r := StartShareReader(ShareConfig{Assignment: path, Host: "gpu-a017", Interval: 150 * time.Millisecond, Timeout: time.Second}, f, nil)
	rd := waitFor(t, r, "three ports read", func(rd *ShareReading) bool {
		return len(rd.Ports) == 3 && rd.Ports[0].Read && rd.Ports[1].Read && rd.Ports[2].Read
	})
	r.Close()
	if !rd.Valid || rd.File != path || rd.Refused != "" {
		t.Fatalf("%+v", rd)
	}
	p := portOf(rd, "0xb83fd20300a02000", 34)
	if p == nil || !p.Wide || p.Counters[0] != 1<<33 || p.Counters[12] != 1<<40 || p.Errors != 0 || p.Err != "" || p.SwitchName != "ibsw-leaf2" || p.SwitchLID != 2 {
		t.Fatalf("leaf 2 port 34: %+v", p)
	}
	reads, checks := f.count("pcx"), f.count("nodeinfo")
	// Two ports of leaf 1 and one of leaf 2 a round, in that order.
	want := 2*(reads/3) + min(reads%3, 1)
	if checks != want || f.count("from 0xa088c20300ab0002") != checks {
		t.Fatalf("%d reads, %d NodeInfo (want %d), %d of them from the ACTIVE port", reads, checks, want, f.count("from 0xa088c20300ab0002"))
	}
	if reads >= 30 || f.count("cpi") != 2 || f.count("ports") != 1 || f.count("pc") != 0 {
		t.Fatalf("ClassPortInfo %d times, ports %d, PortCounters %d over %d reads: cached once per switch (for 10 rounds), the source found once, PortCountersExtended carries the errors",
			f.count("cpi"), f.count("ports"), f.count("pc"), reads)
	}
}

// A failed counter read names the PMA request that failed, the switch, the
// port and the LID: PortCountersExtended where the switch offers it,
// PortCounters where it does not.
func TestReader_FailedCounterReadNamesTheRequest(t *testing.T) {
	t.Parallel()
	timeout := &wire.Error{Kind: wire.ErrTimeout, Msg: "no answer within 1000 ms"}
	for _, tc := range []struct {
		name string
		set  func(*fakeFabric)
		want string
	}{
		{"extended", func(f *fakeFabric) { f.pcxErr = timeout },
			"PMA PortCountersExtended of ibsw-leaf2 port 34 (LID 2): timeout: no answer within 1000 ms"},
		{"PortCounters", func(f *fakeFabric) { f.cpi, f.pcErr = wire.ClassPortInfo{}, timeout },
			"PMA PortCounters of ibsw-leaf2 port 34 (LID 2): timeout: no answer within 1000 ms"},
	} {
		f := newFabric()
		tc.set(f)
		path := filepath.Join(t.TempDir(), "share.json")
		writeFile(t, path, goodFile)
		r := start(t, f, path, 150*time.Millisecond)
		rd := waitFor(t, r, tc.name+": leaf 2 port 34 failed", func(rd *ShareReading) bool {
			p := portOf(rd, "0xb83fd20300a02000", 34)
			return p != nil && p.Errors >= 1
		})
		if p := portOf(rd, "0xb83fd20300a02000", 34); p.Read || !strings.Contains(p.Err, tc.want) {
			t.Errorf("%s: %+v\nwant Err to hold %q", tc.name, p, tc.want)
		}
	}
}

// A switch whose LID the subnet manager gave to another node is not read:
// each of its ports' reads fails, saying why and the fix; the other
// switch is read as before.
func TestReader_LIDReassigned(t *testing.T) {
	t.Parallel()
	f := newFabric()
	f.nodes[2] = "0xa088c20300ac0000" // an HCA now holds leaf 2's LID
	path := filepath.Join(t.TempDir(), "share.json")
	writeFile(t, path, goodFile)
	r := start(t, f, path, 150*time.Millisecond)
	rd := waitFor(t, r, "leaf 2 port 34 failed twice", func(rd *ShareReading) bool {
		p := portOf(rd, "0xb83fd20300a02000", 34)
		return p != nil && p.Errors >= 2
	})
	p := portOf(rd, "0xb83fd20300a02000", 34)
	want := "LID 2 is now CA 0xa088c20300ac0000, not switch 0xb83fd20300a02000 (ibsw-leaf2): the subnet manager reassigned LIDs; re-run nichealth-fabric plan"
	if p.Read || p.Err != want {
		t.Fatalf("%+v\nwant %q", p, want)
	}
	if q := portOf(rd, "0xb83fd20300a01000", 33); q == nil || !q.Read || q.Errors != 0 {
		t.Fatalf("leaf 1 port 33: %+v", q)
	}
}

// The file is watched: a rewrite puts the new list in force; a corrupt
// rewrite is refused with its reason, the old list still read; removing
// the file ends the reads.
func TestReader_RewritesRefusalsAndRemoval(t *testing.T) {
	t.Parallel()
	f := newFabric()
	path := filepath.Join(t.TempDir(), "share.json")
	writeFile(t, path, goodFile)
	r := start(t, f, path, time.Hour)
	waitFor(t, r, "the first list", func(rd *ShareReading) bool { return len(rd.Ports) == 3 && rd.Ports[0].Read })

	one := `{"assignments": {"gpu-a017": [{"switchGUID": "0xb83fd20300a02000", "port": 33, "switchName": "ibsw-leaf2", "switchLID": 2}]}}`
	writeFile(t, path, one)
	waitFor(t, r, "the rewritten list read", func(rd *ShareReading) bool {
		return len(rd.Ports) == 1 && rd.Ports[0].Port == 33 && rd.Ports[0].Read && rd.Valid
	})

	writeFile(t, path, one[:40])
	rd := waitFor(t, r, "the corrupt rewrite refused", func(rd *ShareReading) bool { return !rd.Valid })
	if !strings.Contains(rd.Refused, path+": not the JSON nichealth-fabric plan writes") || len(rd.Ports) != 1 || rd.Ports[0].Port != 33 {
		t.Fatalf("%+v", rd)
	}
	writeFile(t, path, `{"assignments": {"gpu-a099": []}}`)
	rd = waitFor(t, r, "another host's file refused", func(rd *ShareReading) bool { return strings.Contains(rd.Refused, "gpu-a099") })
	if rd.Valid || len(rd.Ports) != 1 {
		t.Fatalf("%+v", rd)
	}
	// A reload reads it again: still refused, still the old list.
	r.Configure(ShareConfig{Assignment: path, Host: "gpu-a017", Interval: time.Hour, Timeout: time.Second})
	if rd := r.Latest(); rd.Valid || len(rd.Ports) != 1 {
		t.Fatalf("after reload %+v", rd)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, r, "no list once the file is gone", func(rd *ShareReading) bool { return len(rd.Ports) == 0 && rd.Valid })
}

// The reads of a round are spread evenly: 10,000 ports over a minute are
// one every 6 ms, the last one 6 ms before the next round.
func TestDue_SpreadsTheRound(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		i, n     int
		interval time.Duration
		want     time.Duration
	}{
		{0, 10_000, time.Minute, 0},
		{1, 10_000, time.Minute, 6 * time.Millisecond},
		{9_999, 10_000, time.Minute, 59_994 * time.Millisecond},
		{1, 3, 60 * time.Second, 20 * time.Second},
		{0, 1, time.Minute, 0},
	} {
		if got := due(t0, c.i, c.n, c.interval).Sub(t0); got != c.want {
			t.Errorf("read %d of %d over %v due at %v, want %v", c.i, c.n, c.interval, got, c.want)
		}
	}
}

// BenchmarkRound_10000Ports runs rounds of a 10,000-port share against
// an instant fabric, the interval short enough that pacing costs nothing:
// what a read costs the reader (ns/read), what it allocates, and the heap
// the share holds (heapB/port).
func BenchmarkRound_10000Ports(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"assignments": {"gpu-a017": [`)
	f := newFabric()
	for i := range MaxPorts {
		if i > 0 {
			sb.WriteByte(',')
		}
		sw := i/40 + 1
		f.nodes[sw] = wire.FormatGUID(0xb83fd20300000000 + uint64(sw))
		fmt.Fprintf(&sb, `{"switchGUID": "%s", "port": %d, "switchName": "ibsw-%d", "switchLID": %d}`, f.nodes[sw], i%40+1, sw, sw)
	}
	sb.WriteString(`]}}`)
	path := filepath.Join(b.TempDir(), "share.json")
	writeFile(b, path, sb.String())
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := StartShareReader(ShareConfig{Assignment: path, Host: "gpu-a017", Interval: time.Millisecond, Timeout: time.Second}, f, nil)
	defer r.Close()
	for f.count("pcx") < MaxPorts {
		time.Sleep(time.Millisecond)
	}
	b.ResetTimer()
	b.ReportAllocs()
	startReads := f.count("pcx")
	for range b.N {
		target := f.count("pcx") + MaxPorts
		for f.count("pcx") < target {
			time.Sleep(100 * time.Microsecond)
		}
	}
	b.StopTimer()
	reads := f.count("pcx") - startReads
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(reads), "ns/read")
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/MaxPorts, "heapB/port")
	if rd := r.Latest(); len(rd.Ports) != MaxPorts {
		b.Fatalf("%d ports in force", len(rd.Ports))
	}
}

// A switch that stays unreadable is said once (then hourly, with the
// count held back), however many rounds fail; a helper that is not
// running stops the round at its first failure instead of failing every
// port against it.
func TestReader_FailuresSaidOnceAndTheHelperBackoffRespected(t *testing.T) {
	t.Parallel()
	f := newFabric()
	f.nodes[2] = "0xb83fd20300a0ffff"
	path := filepath.Join(t.TempDir(), "share.json")
	writeFile(t, path, goodFile)
	var log syncbuf.Buffer
	r := StartShareReader(ShareConfig{Assignment: path, Host: "gpu-a017", Interval: 100 * time.Millisecond, Timeout: time.Second}, f,
		slog.New(slog.NewTextHandler(&log, nil)))
	waitFor(t, r, "four failed rounds of leaf 2", func(rd *ShareReading) bool {
		p := portOf(rd, "0xb83fd20300a02000", 34)
		return p != nil && p.Errors >= 4
	})
	r.Close()
	if n := strings.Count(log.String(), "fabric switch ports not read"); n != 1 {
		t.Fatalf("said %d times:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), "failedPorts=1") || !strings.Contains(log.String(), "re-run nichealth-fabric plan") {
		t.Fatalf("%s", log.String())
	}

	g := newFabric()
	g.helperErr = fmt.Errorf("%w (restarting; next attempt in 1s): nichealth-mad exited", mad.ErrNotRunning)
	r = StartShareReader(ShareConfig{Assignment: path, Host: "gpu-a017", Interval: 100 * time.Millisecond, Timeout: time.Second}, g, nil)
	errs := func(rd *ShareReading) uint64 {
		n := uint64(0)
		for _, p := range rd.Ports {
			n += p.Errors
		}
		return n
	}
	waitFor(t, r, "three rounds against a helper that is down", func(rd *ShareReading) bool {
		return len(rd.Ports) == 3 && errs(rd) >= 3
	})
	r.Close()
	// One ask a round, and it fails: each round's first port (the one
	// waiting longest) is asked and the rest of the round is not.
	if rd := r.Latest(); errs(rd) != uint64(g.count("nodeinfo")) || g.count("pcx") != 0 {
		t.Fatalf("a helper that is down was asked %d times for %d failed reads, %d PMA reads: %+v %+v %+v",
			g.count("nodeinfo"), errs(rd), g.count("pcx"), rd.Ports[0], rd.Ports[1], rd.Ports[2])
	}
}

// A hostile host's assignment file: a FIFO no one writes, a link to
// /dev/zero, a file past the size limit. Each is refused with its reason
// (nothing hangs, nothing grows), and the list in force is still read.
func TestReader_HostileFilesRefusedTheListKept(t *testing.T) {
	t.Parallel()
	f := newFabric()
	dir := t.TempDir()
	path := filepath.Join(dir, "share.json")
	writeFile(t, path, goodFile)
	r := start(t, f, path, time.Hour)
	waitFor(t, r, "the first list", func(rd *ShareReading) bool { return len(rd.Ports) == 3 && rd.Ports[0].Read })

	fifo := filepath.Join(dir, "fifo")
	if err := unix.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(`{"assignments": {"gpu-a017": [`+strings.Repeat(" ", MaxFileBytes)+`]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{fifo, zero, big} {
		// Renamed over the watched path, as configuration management
		// would drop it.
		if err := os.Rename(src, path); err != nil {
			t.Fatal(err)
		}
		rd := waitFor(t, r, filepath.Base(src)+" refused", func(rd *ShareReading) bool { return !rd.Valid })
		t.Logf("%s: %s", filepath.Base(src), rd.Refused)
		if !strings.Contains(rd.Refused, path) || len(rd.Ports) != 3 {
			t.Fatalf("%s: refused %q, %d ports in force, want 3", filepath.Base(src), rd.Refused, len(rd.Ports))
		}
		writeFile(t, path, goodFile)
		waitFor(t, r, "the good file again", func(rd *ShareReading) bool { return rd.Valid })
	}
}
