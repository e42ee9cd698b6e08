package farend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nichealth/nichealthd/internal/repeats"
	"github.com/nichealth/nichealthd/mad"
	"github.com/nichealth/nichealthd/mad/readcore"
	"github.com/nichealth/nichealthd/mad/wire"
)

// PeerClient is what the reader asks of the MAD helper (*mad.Client).
type PeerClient interface {
	Peer(ctx context.Context, l wire.Local, timeout time.Duration) (wire.Peer, error)
	PeerNode(ctx context.Context, l wire.Local, timeout time.Duration) (wire.Peer, error)
	readcore.Client
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

// PeerReader reads the far ends on its own goroutine. Its Configure,
// Latest and Close are the MAD readers' shared core's.
type PeerReader struct {
	readcore.Core[PeerConfig, PeerReading]
	loop *readcore.Loop[PeerConfig, PeerReading]
	c    PeerClient

	mu      sync.Mutex
	targets []Target

	// Owned by the goroutine:
	ports   map[key]*PeerPort
	epochs  map[key]uint64
	names   names
	logs    repeats.Limiter
	gen     uint64
	lastErr error
	rounds  uint64
	at      time.Time // round start, every reading's ReadAt: full rounds' reads an interval apart, as local ticks (DESIGN.md difference 14)
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
	l := readcore.New(cfg, &PeerReading{At: time.Now(), Helper: c.State()}, c, log)
	r := &PeerReader{Core: l.Core(), loop: l, c: c,
		ports: map[key]*PeerPort{}, epochs: map[key]uint64{}, logs: repeats.Limiter{Window: time.Hour}}
	l.Go(r.run)
	return r
}

// SetTargets replaces the ports to watch; the reader looks at once at
// what changed. The caller keeps ts (it is copied).
func (r *PeerReader) SetTargets(ts []Target) {
	r.mu.Lock()
	r.targets = append(r.targets[:0], ts...)
	r.mu.Unlock()
	r.loop.Poke()
}

func (r *PeerReader) snapshot() (PeerConfig, []Target) {
	cfg := r.loop.Config()
	r.mu.Lock()
	defer r.mu.Unlock()
	return cfg, slices.Clone(r.targets)
}

func (r *PeerReader) run(ctx context.Context) {
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
		case <-r.loop.Wake():
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
	r.names.refresh(cfg, r.loop.Log(), r.loop.SayOnce)
	umad := readcore.UmadMissing(cfg.UmadDir)
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
		if umad != "" || ctx.Err() != nil {
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
	unavailable := readcore.Unavailable(cfg.UmadDir, st)
	if unavailable != "" {
		r.loop.SayOnce("unavailable", "the far end of the InfiniBand ports is not read on this host; every other check runs", "reason", unavailable)
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
	c, err := readcore.ReadCounters(ctx, r.c, local, p.CPI, peer.LID, peer.Port, cfg.Timeout)
	if err != nil {
		what := "read the counters of"
		if ce := (*readcore.CounterError)(nil); errors.As(err, &ce) && ce.Extended {
			what = "read the extended counters of"
		}
		r.fail(p, fmt.Sprintf("%s %s port %d", what, peer.Name, peer.Port), err)
		// Its LID may have moved: ask everything again next round.
		p.Found = false
		return
	}
	var ext *wire.PortCountersExt
	if c.HasExt {
		ext = &c.Ext
	}
	p.Read, p.Seq, p.ReadAt, p.Counters, p.Wide, p.Ext = true, p.Seq+1, r.at, c.PortCounters, c.Wide, ext
}

func (r *PeerReader) fail(p *PeerPort, what string, err error) {
	r.lastErr = err
	p.ReadErrors++
	p.Err = fmt.Sprintf("%s: %v", what, err)
	if ok, n := r.logs.Note(fmt.Sprintf("%s/%d %s", p.Device, p.Port, what), time.Now()); ok {
		r.loop.Log().Warn("far end not read", "device", p.Device, "port", p.Port, "error", p.Err, "suppressed", n)
	}
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
	r.loop.Publish(rd)
}
