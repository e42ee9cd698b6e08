package farend

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/mad"
	"github.com/nichealth/nichealthd/mad/wire"
)

// fakeClient is a fabric of switches answering by the local port's GUID.
type fakeClient struct {
	mu      sync.Mutex
	peers   map[string]wire.Peer // by local port GUID
	sym     uint64
	cpi     wire.ClassPortInfo
	calls   map[string]int
	err     error
	state   mad.State
	closed  bool
	extErrs *wire.PortCounters
	// counterErr fails PortCounters alone.
	counterErr error
	// slow delays the counter read (PortCounters or PortCountersExt) of
	// that number (1-based).
	slow map[int]time.Duration
}

// delay holds the counter read that op counted last as slow says.
func (f *fakeClient) delay(op string) {
	f.mu.Lock()
	d := f.slow[f.calls[op]]
	f.mu.Unlock()
	time.Sleep(d)
}

func newFake() *fakeClient {
	return &fakeClient{peers: map[string]wire.Peer{
		"0xa088c20300ab0001": {NodeGUID: "0xb83fd20300a01000", PortGUID: "0xb83fd20300a01000", NodeType: 2, NumPorts: 41, Port: 17, LID: 1, Description: "MF0;ibsw-leaf1:MQM8700/U1", State: 4, PhysState: 5},
	}, calls: map[string]int{}, state: mad.State{Health: mad.Running}}
}

func (f *fakeClient) note(op string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[op]++
	return f.err
}

func (f *fakeClient) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *fakeClient) Peer(_ context.Context, l wire.Local, _ time.Duration) (wire.Peer, error) {
	f.note("peer " + l.GUID)
	if err := f.note("peer"); err != nil {
		return wire.Peer{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.peers[l.GUID]
	if !ok {
		return wire.Peer{}, &wire.Error{Kind: wire.ErrNoPort, Msg: "no local port has GUID " + l.GUID}
	}
	return p, nil
}

func (f *fakeClient) PeerNode(ctx context.Context, l wire.Local, d time.Duration) (wire.Peer, error) {
	f.note("peernode")
	p, err := f.Peer(ctx, l, d)
	p.LID, p.Description, p.State, p.PhysState = 0, "", 0, 0
	return p, err
}

func (f *fakeClient) ClassPortInfo(context.Context, wire.Local, int, time.Duration) (wire.ClassPortInfo, error) {
	return f.cpi, f.note("cpi")
}

func (f *fakeClient) PortCounters(context.Context, wire.Local, int, int, time.Duration) (wire.PortCounters, error) {
	err := f.note("counters")
	f.delay("counters")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counterErr != nil {
		return wire.PortCounters{}, f.counterErr
	}
	return wire.PortCounters{SymbolErrorCounter: f.sym}, err
}

func (f *fakeClient) PortCountersExt(_ context.Context, _ wire.Local, _, _ int, withErrors bool, _ time.Duration) (wire.PortCountersExt, error) {
	err := f.note("ext")
	f.delay("ext")
	f.mu.Lock()
	defer f.mu.Unlock()
	x := wire.PortCountersExt{PortXmitData: 7}
	if withErrors {
		x.Errors = f.extErrs
	}
	return x, err
}

func (f *fakeClient) State() mad.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state
}

func (f *fakeClient) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

var up = Target{Device: "mlx5_0", Port: 1, GUID: "0xa088c20300ab0001", Up: true, Epoch: 1}

// waitFor waits until a published reading satisfies ok.
func waitFor(t *testing.T, r *PeerReader, after uint64, ok func(*PeerReading) bool) *PeerReading {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		rd := r.Latest()
		if rd.Gen > after && ok(rd) {
			return rd
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reading as wanted; last %+v", rd)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func umadDir(t *testing.T) string {
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "umad0"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return d
}

// A watched ACTIVE port: its peer found by its GUID, the peer's PMA asked
// once what it offers, its counters read every interval and numbered;
// the same peer is not asked for ClassPortInfo again.
func TestReader_FindsAndReadsEveryInterval(t *testing.T) {
	f := newFake()
	f.sym = 55
	r := StartPeerReader(PeerConfig{Interval: 20 * time.Millisecond, Timeout: time.Second, UmadDir: umadDir(t)}, f, nil)
	r.SetTargets([]Target{up})
	rd := waitFor(t, r, 0, func(rd *PeerReading) bool { p := rd.Port("mlx5_0", 1); return p != nil && p.Read && p.Seq >= 3 })
	p := rd.Port("mlx5_0", 1)
	if !p.Found || p.Peer.Port != 17 || p.Peer.LID != 1 || p.Peer.Name != "MF0;ibsw-leaf1:MQM8700/U1" || p.Counters.SymbolErrorCounter != 55 || p.Wide || p.Err != "" {
		t.Fatalf("%+v", p)
	}
	if n := f.count("cpi"); n != 1 {
		t.Errorf("ClassPortInfo asked %d times for one peer", n)
	}
	if f.count("ext") != 0 {
		t.Error("PortCountersExtended read from a PMA that does not offer it")
	}
	// A known peer is confirmed by NodeInfo alone: 1 SMP + 1 GMP a round
	// (README "Cost").
	r.Close()
	full, quick := f.count("peer")-f.count("peernode"), f.count("peernode")
	if quick < 2 || full < 1 || full > 1+quick/(rediscoverEvery-1) {
		t.Errorf("%d full discoveries and %d confirmations: want one, then one every %d rounds", full, quick, rediscoverEvery)
	}
}

// A port state change finds the peer again at once, without reading the
// counters out of turn; a recabled port's new peer is read at once (its
// baseline) and asked what it offers.
func TestReader_StateChangeRediscoversWithoutReadingTwice(t *testing.T) {
	f := newFake()
	r := StartPeerReader(PeerConfig{Interval: time.Hour, Timeout: time.Second, UmadDir: umadDir(t)}, f, nil)
	defer r.Close()
	r.SetTargets([]Target{up})
	rd := waitFor(t, r, 0, func(rd *PeerReading) bool { p := rd.Port("mlx5_0", 1); return p != nil && p.Read })
	moved := up
	moved.Epoch = 2
	r.SetTargets([]Target{moved})
	rd = waitFor(t, r, rd.Gen, func(*PeerReading) bool { return f.count("peer") >= 2 })
	if c := f.count("counters"); c != 1 {
		t.Fatalf("a state change read the counters again (%d reads within the interval)", c)
	}
	f.mu.Lock()
	f.peers[up.GUID] = wire.Peer{NodeGUID: "0xb83fd20300a02000", PortGUID: "0xb83fd20300a02000", NodeType: 2, NumPorts: 41, Port: 17, LID: 2, Description: "leaf2", State: 4, PhysState: 5}
	f.mu.Unlock()
	moved.Epoch = 3
	r.SetTargets([]Target{moved})
	rd = waitFor(t, r, rd.Gen, func(rd *PeerReading) bool { p := rd.Port("mlx5_0", 1); return p.Peer.LID == 2 && p.Read })
	if p := rd.Port("mlx5_0", 1); p.Peer.NodeGUID != "0xb83fd20300a02000" || f.count("cpi") != 2 || f.count("counters") != 2 {
		t.Fatalf("recabled: %+v, cpi %d, counters %d", p, f.count("cpi"), f.count("counters"))
	}
	// Down: no peer to read.
	moved.Up, moved.Epoch = false, 4
	r.SetTargets([]Target{moved})
	rd = waitFor(t, r, rd.Gen, func(rd *PeerReading) bool { return !rd.Port("mlx5_0", 1).Found })
	// Gone from the targets: gone from the reading.
	r.SetTargets(nil)
	waitFor(t, r, rd.Gen, func(rd *PeerReading) bool { return len(rd.Ports) == 0 })
}

// Without a umad device the helper is never started, and the reading
// says why with the fix.
func TestReader_NoUmadNoHelper(t *testing.T) {
	f := newFake()
	r := StartPeerReader(PeerConfig{Interval: time.Hour, Timeout: time.Second, UmadDir: t.TempDir()}, f, nil)
	defer r.Close()
	r.SetTargets([]Target{up})
	rd := waitFor(t, r, 0, func(rd *PeerReading) bool { return rd.Unavailable != "" && len(rd.Ports) == 1 })
	if !strings.Contains(rd.Unavailable, "modprobe ib_umad") || f.count("peer") != 0 {
		t.Fatalf("%q, %d requests", rd.Unavailable, f.count("peer"))
	}
}

// A helper that cannot run makes the reading unavailable with its reason;
// a helper backing off is not asked again within the round.
func TestReader_HelperUnavailable(t *testing.T) {
	f := newFake()
	f.err = mad.ErrNotRunning
	f.state = mad.State{Health: mad.Unavailable, Reason: "nichealth-mad: libibmad.so.5 missing (apt-get install libibumad3 libibmad5)"}
	other := up
	other.Device, other.GUID = "mlx5_1", "0xa088c20300ab0002"
	r := StartPeerReader(PeerConfig{Interval: time.Hour, Timeout: time.Second, UmadDir: umadDir(t)}, f, nil)
	defer r.Close()
	r.SetTargets([]Target{up, other})
	rd := waitFor(t, r, 0, func(rd *PeerReading) bool { return rd.Unavailable != "" })
	if !strings.Contains(rd.Unavailable, "apt-get install") || f.count("peer "+other.GUID) != 0 {
		t.Fatalf("%q; the second port was asked %d times after the first found the helper backing off", rd.Unavailable, f.count("peer "+other.GUID))
	}
}

// A PMA that offers the 64-bit error counters is read through them.
func TestReader_WideCounters(t *testing.T) {
	f := newFake()
	f.cpi = wire.ClassPortInfo{CapMask: wire.CapExtWidth, CapMask2: wire.Cap2AddlPortCountersX}
	f.extErrs = &wire.PortCounters{SymbolErrorCounter: 1 << 40}
	r := StartPeerReader(PeerConfig{Interval: time.Hour, Timeout: time.Second, UmadDir: umadDir(t)}, f, nil)
	defer r.Close()
	r.SetTargets([]Target{up})
	rd := waitFor(t, r, 0, func(rd *PeerReading) bool { p := rd.Port("mlx5_0", 1); return p != nil && p.Read })
	if p := rd.Port("mlx5_0", 1); !p.Wide || p.Counters.SymbolErrorCounter != 1<<40 || p.Ext == nil || p.Ext.PortXmitData != 7 {
		t.Fatalf("%+v", p)
	}
	if f.count("counters") != 0 {
		t.Fatal("PortCounters read besides the 64-bit errors of PortCountersExtended")
	}
}

// Peers are named by the node-name map, read again when it changes; an
// optional map that is absent is silently unused.
func TestReader_NodeNameMap(t *testing.T) {
	f := newFake()
	m := filepath.Join(t.TempDir(), "ib-node-name-map")
	r := StartPeerReader(PeerConfig{Interval: 10 * time.Millisecond, Timeout: time.Second, UmadDir: umadDir(t), NodeNameMap: m, Optional: true}, f, nil)
	defer r.Close()
	r.SetTargets([]Target{up})
	rd := waitFor(t, r, 0, func(rd *PeerReading) bool { p := rd.Port("mlx5_0", 1); return p != nil && p.Found })
	if n := rd.Port("mlx5_0", 1).Peer.Name; n != "MF0;ibsw-leaf1:MQM8700/U1" {
		t.Fatalf("without a map: %q", n)
	}
	if err := os.WriteFile(m, []byte("0xb83fd20300a01000 \"ibsw-leaf1\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rd = waitFor(t, r, rd.Gen, func(rd *PeerReading) bool { return rd.Port("mlx5_0", 1).Peer.Name == "ibsw-leaf1" })
	if err := os.WriteFile(m, []byte("0xb83fd20300a01000 \"leaf-one, rack 3\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(m, time.Now().Add(time.Minute), time.Now().Add(time.Minute))
	waitFor(t, r, rd.Gen, func(rd *PeerReading) bool { return rd.Port("mlx5_0", 1).Peer.Name == "leaf-one, rack 3" })
}

func TestReader_CloseClosesTheHelper(t *testing.T) {
	f := newFake()
	r := StartPeerReader(PeerConfig{Interval: time.Hour, Timeout: time.Second}, f, nil)
	r.Close()
	if !f.closed {
		t.Fatal("helper left running")
	}
}

// A known peer is asked everything again every rediscoverEvery rounds (a
// LID the subnet manager moved does not show in NodeInfo), and at once
// after its counters could not be read.
func TestReader_RediscoversNowAndThenAndAfterAFailedRead(t *testing.T) {
	f := newFake()
	r := StartPeerReader(PeerConfig{Interval: 5 * time.Millisecond, Timeout: time.Second, UmadDir: umadDir(t)}, f, nil)
	r.SetTargets([]Target{up})
	waitFor(t, r, 0, func(rd *PeerReading) bool { p := rd.Port("mlx5_0", 1); return p != nil && p.Seq >= 2*rediscoverEvery+1 })
	r.Close()
	if full := f.count("peer") - f.count("peernode"); full < 2 {
		t.Fatalf("%d complete discoveries over %d rounds", full, 2*rediscoverEvery)
	}
	// A counter read that fails: the next round asks everything again.
	f = newFake()
	r = StartPeerReader(PeerConfig{Interval: 20 * time.Millisecond, Timeout: time.Second, UmadDir: umadDir(t)}, f, nil)
	defer r.Close()
	r.SetTargets([]Target{up})
	rd := waitFor(t, r, 0, func(rd *PeerReading) bool { p := rd.Port("mlx5_0", 1); return p != nil && p.Read })
	f.mu.Lock()
	f.counterErr = &wire.Error{Kind: wire.ErrTimeout, Msg: "no answer from the PMA"}
	f.mu.Unlock()
	rd = waitFor(t, r, rd.Gen, func(rd *PeerReading) bool {
		return strings.Contains(rd.Port("mlx5_0", 1).Err, "no answer from the PMA")
	})
	before := f.count("peer") - f.count("peernode")
	f.mu.Lock()
	f.counterErr = nil
	f.mu.Unlock()
	waitFor(t, r, rd.Gen, func(rd *PeerReading) bool { p := rd.Port("mlx5_0", 1); return p.Found && p.Err == "" })
	if after := f.count("peer") - f.count("peernode"); after <= before {
		t.Fatalf("no complete discovery after the failed read (%d, then %d)", before, after)
	}
}

// DESIGN.md section 13 ("a failed read leaves the last series in place"):
// while the far end does not answer (every MAD times out: the helper
// stopped, the fabric frozen), the reading keeps the last peer, its last
// counters and the time of the last good read, and counts each failed
// attempt; a read that succeeds again moves ReadAt, and the count stays
// (a counter).
func TestReader_Design13_FailedReadsKeepTheLastReadingAndCount(t *testing.T) {
	f := newFake()
	f.sym = 55
	r := StartPeerReader(PeerConfig{Interval: 10 * time.Millisecond, Timeout: time.Second, UmadDir: umadDir(t)}, f, nil)
	defer r.Close()
	r.SetTargets([]Target{up})
	rd := waitFor(t, r, 0, func(rd *PeerReading) bool { p := rd.Port("mlx5_0", 1); return p != nil && p.Read })
	good := *rd.Port("mlx5_0", 1)
	if good.ReadErrors != 0 {
		t.Fatalf("errors before any failure: %d", good.ReadErrors)
	}
	f.mu.Lock()
	f.err = &wire.Error{Kind: wire.ErrTimeout, Msg: "MAD timed out"}
	f.mu.Unlock()
	rd = waitFor(t, r, rd.Gen, func(rd *PeerReading) bool { return rd.Port("mlx5_0", 1).ReadErrors >= 3 })
	p := rd.Port("mlx5_0", 1)
	if p.Found || !p.Read || !strings.Contains(p.Err, "MAD timed out") {
		t.Fatalf("failing: %+v", p)
	}
	if p.Peer.NodeGUID != "0xb83fd20300a01000" || p.Peer.Port != 17 || p.Counters.SymbolErrorCounter != 55 || !p.ReadAt.Equal(good.ReadAt) {
		t.Fatalf("the last reading was not kept: peer %+v counters %d read at %v (was %v)", p.Peer, p.Counters.SymbolErrorCounter, p.ReadAt, good.ReadAt)
	}
	n := p.ReadErrors
	f.mu.Lock()
	f.err = nil
	f.mu.Unlock()
	rd = waitFor(t, r, rd.Gen, func(rd *PeerReading) bool {
		p := rd.Port("mlx5_0", 1)
		return p.Found && p.Read && p.ReadAt.After(good.ReadAt)
	})
	if p := rd.Port("mlx5_0", 1); p.ReadErrors < n || p.Err != "" {
		t.Fatalf("after the fabric answers again: %d errors (had %d), err %q", p.ReadErrors, n, p.Err)
	}
}

// A reading stands for its round, as a local counter sample stands for
// its tick (DESIGN.md difference 14; section 13, "judged as the near
// end is"): two reads of a port in consecutive full rounds are at least
// an interval apart whatever the MADs before them took, so a per-minute
// rule at the default 60 s interval is judged over one minute, never
// held to the next read and diluted over two because one read answered
// 40 ms later than the next.
func TestReader_ReadsAFullIntervalApart(t *testing.T) {
	for _, wide := range []bool{false, true} {
		t.Run(fmt.Sprintf("PortCountersExtended %v", wide), func(t *testing.T) {
			f := newFake()
			if wide {
				f.cpi = wire.ClassPortInfo{CapMask: wire.CapExtWidth, CapMask2: wire.Cap2AddlPortCountersX}
				f.extErrs = &wire.PortCounters{SymbolErrorCounter: 3}
			}
			f.slow = map[int]time.Duration{2: 40 * time.Millisecond}
			const interval = 100 * time.Millisecond
			r := StartPeerReader(PeerConfig{Interval: interval, Timeout: time.Second, UmadDir: umadDir(t)}, f, nil)
			t.Cleanup(r.Close)
			r.SetTargets([]Target{up})
			at := map[uint64]time.Time{}
			waitFor(t, r, 0, func(rd *PeerReading) bool {
				if p := rd.Port("mlx5_0", 1); p != nil && p.Read && p.Wide == wide {
					at[p.Seq] = p.ReadAt
				}
				return !at[2].IsZero() && !at[3].IsZero()
			})
			if d := at[3].Sub(at[2]); d < interval {
				t.Fatalf("the reads of two full rounds are %v apart, less than the %v interval", d, interval)
			}
		})
	}
}
