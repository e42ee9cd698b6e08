package farend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nichealth/nichealthd/internal/repeats"
	"github.com/nichealth/nichealthd/mad"
	"github.com/nichealth/nichealthd/mad/wire"
)

// PeerClient is what the reader asks of the MAD helper (*mad.Client).
type PeerClient interface {
	Peer(ctx context.Context, l wire.Local, timeout time.Duration) (wire.Peer, error)
	PeerNode(ctx context.Context, l wire.Local, timeout time.Duration) (wire.Peer, error)
	ClassPortInfo(ctx context.Context, l wire.Local, lid int, timeout time.Duration) (wire.ClassPortInfo, error)
	PortCounters(ctx context.Context, l wire.Local, lid, port int, timeout time.Duration) (wire.PortCounters, error)
	PortCountersExt(ctx context.Context, l wire.Local, lid, port int, withErrors bool, timeout time.Duration) (wire.PortCountersExt, error)
	State() mad.State
	Close() error
}

// Target is a local port to read the far end of.
type Target struct {
	Device string
	Port   int
	// GUID is the port GUID as sysfs shows it (gids/0), "0x" and 16 hex
	// digits: what matches it to its MAD port.
	GUID string
	// Up says the port is ACTIVE: only an ACTIVE port has a peer worth
	// reading (its LIDs are assigned).
	Up bool
	// Epoch changes with every state change of the port: the peer is
	// found again at once.
	Epoch uint64
}

// PeerConfig is how the reader reads.
type PeerConfig struct {
	Interval time.Duration
	Timeout  time.Duration
	// NodeNameMap names peers ("" none); Optional says it is the
	// default, silently unused when absent.
	NodeNameMap string
	Optional    bool
	// UmadDir is where the umad devices are (<devRoot>/infiniband): with
	// none there, the helper is not started.
	UmadDir string
}

// Peer is the node at the other end of a local port.
type Peer struct {
	wire.Peer
	// Name is the node-name map's name for it, or its NodeDescription.
	Name string
}

// PeerPort is what the reader knows of one local port's far end.
type PeerPort struct {
	Device string
	Port   int
	GUID   string
	// Found says Peer holds the node at the other end, found at
	// FoundAt.
	Found   bool
	Peer    Peer
	FoundAt time.Time
	// CPI is what the peer's PMA offers.
	CPI wire.ClassPortInfo
	// Read says Counters hold a reading, taken at ReadAt; Seq counts the
	// readings of this peer (the check judges each once). Wide says the
	// error counters came from PortCountersExtended (64-bit: they never
	// saturate). Ext holds PortCountersExtended when offered.
	Read     bool
	Seq      uint64
	ReadAt   time.Time
	Counters wire.PortCounters
	Wide     bool
	Ext      *wire.PortCountersExt
	// Err says why the last attempt failed ("" when it did not).
	Err string
	// ReadErrors counts the failed attempts to find or read this port's
	// far end since the reader started (a counter: it survives a new
	// peer). A failure leaves Read, ReadAt, Peer and Counters as the last
	// good read left them, so the views keep the last series, aged by
	// ReadAt, instead of losing them while the fabric does not answer.
	ReadErrors uint64
}

// PeerReading is one published state of every watched port's far end. It is
// never modified once published.
type PeerReading struct {
	// Gen increments with every publication.
	Gen uint64
	At  time.Time
	// Helper is the MAD helper's state.
	Helper mad.State
	// Unavailable says why no far end can be read on this host at all ("":
	// it can): no umad device, the helper or its libraries missing.
	Unavailable string
	Ports       []PeerPort
}

// Port is the reading of device/port (nil when not watched).
func (r *PeerReading) Port(device string, port int) *PeerPort {
	for i := range r.Ports {
		if r.Ports[i].Device == device && r.Ports[i].Port == port {
			return &r.Ports[i]
		}
	}
	return nil
}

// PeerReader reads the far ends on its own goroutine.
type PeerReader struct {
	c   PeerClient
	log *slog.Logger

	mu      sync.Mutex
	cfg     PeerConfig
	targets []Target

	latest atomic.Pointer[PeerReading]
	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}

	// Owned by the goroutine:
	ports    map[key]*PeerPort
	epochs   map[key]uint64
	names    names
	logs     repeats.Limiter
	gen      uint64
	saidOnce map[string]bool
	lastErr  error
	rounds   uint64
	at       time.Time // round start, every reading's ReadAt: full rounds' reads an interval apart, as local ticks (DESIGN.md difference 14)
}

// rediscoverEvery is how many full rounds pass between two complete
// discoveries of a known peer (NodeInfo alone confirms it in between).
const rediscoverEvery = 10

type key struct {
	dev  string
	port int
}

// StartPeerReader runs the reader over c; Close ends it.
func StartPeerReader(cfg PeerConfig, c PeerClient, log *slog.Logger) *PeerReader {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &PeerReader{c: c, log: log, cfg: cfg, wake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{}),
		ports: map[key]*PeerPort{}, epochs: map[key]uint64{}, logs: repeats.Limiter{Window: time.Hour}, saidOnce: map[string]bool{}}
	r.latest.Store(&PeerReading{At: time.Now(), Helper: c.State()})
	go r.loop(ctx)
	return r
}

// SetTargets replaces the ports to watch; the reader looks at once at
// what changed. The caller keeps ts (it is copied).
func (r *PeerReader) SetTargets(ts []Target) {
	r.mu.Lock()
	r.targets = append(r.targets[:0], ts...)
	r.mu.Unlock()
	r.poke()
}

// Configure applies a new configuration at once.
func (r *PeerReader) Configure(cfg PeerConfig) {
	r.mu.Lock()
	r.cfg = cfg
	r.mu.Unlock()
	r.poke()
}

func (r *PeerReader) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Latest is the last published reading (never nil).
func (r *PeerReader) Latest() *PeerReading { return r.latest.Load() }

// Close stops the reader and the helper.
func (r *PeerReader) Close() {
	r.cancel()
	<-r.done
	r.c.Close()
}

func (r *PeerReader) snapshot() (PeerConfig, []Target) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cfg, slices.Clone(r.targets)
}

func (r *PeerReader) loop(ctx context.Context) {
	defer close(r.done)
	var last time.Time
	for {
		cfg, ts := r.snapshot()
		r.at = time.Now()
		full := last.IsZero() || r.at.Sub(last) >= cfg.Interval
		if full {
			r.rounds++
		}
		r.round(ctx, cfg, ts, full)
		if full {
			last = r.at
		}
		if ctx.Err() != nil {
			return
		}
		t := time.NewTimer(time.Until(last.Add(cfg.Interval)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-r.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// round looks at every target: a full round finds every peer again and
// reads its counters; otherwise only ports whose state changed (or that
// were never found) are found again, and only a new peer is read (its
// baseline).
func (r *PeerReader) round(ctx context.Context, cfg PeerConfig, ts []Target, full bool) {
	now := time.Now()
	r.names.refresh(cfg, r.log, r.sayOnce)
	unavailable := umadMissing(cfg.UmadDir)
	keep := map[key]bool{}
	for _, t := range ts {
		k := key{t.Device, t.Port}
		keep[k] = true
		p := r.ports[k]
		if p == nil {
			p = &PeerPort{Device: t.Device, Port: t.Port}
			r.ports[k] = p
		}
		changed := r.epochs[k] != t.Epoch || p.GUID != t.GUID
		r.epochs[k], p.GUID = t.Epoch, t.GUID
		if !t.Up || t.GUID == "" {
			// A port that is not ACTIVE has no peer to read; it is found
			// again when it comes back.
			p.Found, p.Read, p.Err = false, false, ""
			if t.GUID == "" {
				p.Err = "the port's GUID is unknown (gids/0 unreadable): it cannot be matched to a MAD port"
			}
			continue
		}
		if unavailable != "" || ctx.Err() != nil {
			continue
		}
		if !full && !changed && p.Found {
			continue
		}
		// Every rediscoverEvery-th round a known peer is asked everything
		// again too: a subnet manager that reassigned its LID does not
		// change its NodeInfo, and a PMA Get to a stale LID could reach
		// another switch.
		r.look(ctx, cfg, p, changed || full && r.rounds%rediscoverEvery == 0, full || !p.Read)
		if errors.Is(r.lastErr, mad.ErrNotRunning) || errors.Is(r.lastErr, mad.ErrLost) {
			// The helper is backing off: ask nothing more this round.
			break
		}
	}
	for k := range r.ports {
		if !keep[k] {
			delete(r.ports, k)
			delete(r.epochs, k)
		}
	}
	st := r.c.State()
	if unavailable == "" && st.Health == mad.Unavailable {
		unavailable = st.Reason
	}
	if unavailable != "" {
		r.sayOnce("unavailable", "the far end of the InfiniBand ports is not read on this host; every other check runs", "reason", unavailable)
	}
	r.publish(now, st, unavailable)
}

// look finds the peer of p and, when read, reads its counters. A peer
// found before, on a port whose state did not change, is only confirmed
// by its NodeInfo (one SMP); a new or changed one is asked everything
// (NodeInfo, NodeDescription, PortInfo: four SMPs) and its PMA what it
// offers. Counters are one GMP: PortCounters, or PortCountersExtended
// when it carries the 64-bit error counters (PortCounters too when it
// carries only the 64-bit data counters).
func (r *PeerReader) look(ctx context.Context, cfg PeerConfig, p *PeerPort, changed, read bool) {
	r.lastErr = nil
	local := wire.Local{GUID: p.GUID}
	if p.Found && !changed {
		id, err := r.c.PeerNode(ctx, local, cfg.Timeout)
		if err != nil {
			r.fail(p, "confirm the peer", err)
			p.Found = false
			return
		}
		if id.NodeGUID == p.Peer.NodeGUID && id.Port == p.Peer.Port {
			// The map may have named it since.
			p.Peer.Name = r.names.name(p.Peer.Peer)
			p.FoundAt, p.Err = time.Now(), ""
			if read {
				r.readCounters(ctx, cfg, p, local)
			}
			return
		}
	}
	peer, err := r.c.Peer(ctx, local, cfg.Timeout)
	if err != nil {
		r.fail(p, "find the peer", err)
		p.Found = false
		return
	}
	np := Peer{Peer: peer, Name: r.names.name(peer)}
	if !p.Found || p.Peer.NodeGUID != peer.NodeGUID || p.Peer.Port != peer.Port || p.Peer.LID != peer.LID {
		// A new peer (or a new LID): its PMA, its counters, from scratch.
		cpi, err := r.c.ClassPortInfo(ctx, local, peer.LID, cfg.Timeout)
		if err != nil {
			r.fail(p, fmt.Sprintf("ask the PMA of %s (LID %d) what it offers", np.Name, peer.LID), err)
			p.Found = false
			return
		}
		*p = PeerPort{Device: p.Device, Port: p.Port, GUID: p.GUID, CPI: cpi, Seq: p.Seq, ReadErrors: p.ReadErrors}
		read = true
	}
	p.Found, p.Peer, p.FoundAt, p.Err = true, np, time.Now(), ""
	if read {
		r.readCounters(ctx, cfg, p, local)
	}
}

func (r *PeerReader) readCounters(ctx context.Context, cfg PeerConfig, p *PeerPort, local wire.Local) {
	peer := &p.Peer
	var ext *wire.PortCountersExt
	if p.CPI.Extended() {
		// 64-bit data counters whenever offered (PortCounters' saturate in
		// a second at HDR); the errors too when offered: then one read does.
		x, err := r.c.PortCountersExt(ctx, local, peer.LID, peer.Port, p.CPI.ExtendedErrors(), cfg.Timeout)
		if err != nil {
			r.fail(p, fmt.Sprintf("read the extended counters of %s port %d", peer.Name, peer.Port), err)
			p.Found = false
			return
		}
		if x.Errors != nil {
			p.Read, p.Seq, p.ReadAt, p.Counters, p.Wide, p.Ext = true, p.Seq+1, r.at, *x.Errors, true, &x
			return
		}
		ext = &x
	}
	pc, err := r.c.PortCounters(ctx, local, peer.LID, peer.Port, cfg.Timeout)
	if err != nil {
		r.fail(p, fmt.Sprintf("read the counters of %s port %d", peer.Name, peer.Port), err)
		// Its LID may have moved: ask everything again next round.
		p.Found = false
		return
	}
	if ext != nil {
		pc.PortXmitData, pc.PortRcvData, pc.PortXmitPkts, pc.PortRcvPkts = ext.PortXmitData, ext.PortRcvData, ext.PortXmitPkts, ext.PortRcvPkts
	}
	p.Read, p.Seq, p.ReadAt, p.Counters, p.Wide, p.Ext = true, p.Seq+1, r.at, pc, false, ext
}

func (r *PeerReader) fail(p *PeerPort, what string, err error) {
	r.lastErr = err
	p.ReadErrors++
	p.Err = fmt.Sprintf("%s: %v", what, err)
	if ok, n := r.logs.Note(fmt.Sprintf("%s/%d %s", p.Device, p.Port, what), time.Now()); ok {
		r.log.Warn("far end not read", "device", p.Device, "port", p.Port, "error", p.Err, "suppressed", n)
	}
}

// sayOnce logs a line once per process for key.
func (r *PeerReader) sayOnce(key, msg string, args ...any) {
	if r.saidOnce[key] {
		return
	}
	r.saidOnce[key] = true
	r.log.Warn(msg, args...)
}

func (r *PeerReader) publish(now time.Time, st mad.State, unavailable string) {
	r.gen++
	rd := &PeerReading{Gen: r.gen, At: now, Helper: st, Unavailable: unavailable, Ports: make([]PeerPort, 0, len(r.ports))}
	for _, p := range r.ports {
		c := *p
		if p.Ext != nil {
			x := *p.Ext
			c.Ext = &x
		}
		rd.Ports = append(rd.Ports, c)
	}
	slices.SortFunc(rd.Ports, func(a, b PeerPort) int {
		if a.Device != b.Device {
			return strings.Compare(a.Device, b.Device)
		}
		return a.Port - b.Port
	})
	r.latest.Store(rd)
}

// umadMissing says why MADs cannot be sent from this host, "" when a
// umad device exists.
func umadMissing(dir string) string {
	if dir == "" {
		return ""
	}
	m, _ := filepath.Glob(filepath.Join(dir, "umad*"))
	if len(m) > 0 {
		return ""
	}
	return fmt.Sprintf("no InfiniBand MAD device (%s/umad*): load the ib_umad kernel module (modprobe ib_umad; rdma-core's rdma-load-modules@rdma.service loads it at boot)", dir)
}
