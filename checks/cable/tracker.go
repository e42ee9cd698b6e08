package cable

import (
	"time"

	"github.com/nichealth/nichealthd/mad/farend"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology"
)

// The error counters that give a direction, at each end of an InfiniBand
// cable and at our end of a RoCE one (seed link counter detection 10.2
// and the IBTA PortCounters they mirror): errors a receiver counts on the
// signal or the packets that crossed the cable.
//   - symbol_error / SymbolErrorCounter: bit errors on the lanes;
//   - link_error_recovery / LinkErrorRecoveryCounter: the receiver lost
//     the link and retrained it;
//   - local_link_integrity_errors / LocalLinkIntegrityErrors: the
//     physical errors past the port's LocalPhyErrors cap;
//   - port_rcv_errors / PortRcvErrors: packets received with an error,
//     CRC errors from the link first (the switch port at the end of our
//     cable receives only what we send, so it is ours to read there);
//   - RoCE: rx_symbol_err_phy (errors FEC could not correct) and
//     rx_pcs_symbol_err_phy (PCS symbol errors).
//
// Left out: link_downed (both directions at once, the link-down
// episode's, not a direction), the congestion and transport counters
// (fabric traffic, not the cable), rx_corrected_bits_phy (a healthy link
// corrects bits all the time; its BER condition is the counter check's).
var (
	hostErrorCounters = []string{"symbol_error", "link_error_recovery", "local_link_integrity_errors", "port_rcv_errors",
		"rx_symbol_err_phy", "rx_pcs_symbol_err_phy"}
	peerErrorFields = [...]struct {
		name string
		idx  int // in wire.Fields
	}{{"SymbolErrorCounter", 0}, {"LinkErrorRecoveryCounter", 1}, {"PortRcvErrors", 3}, {"LocalLinkIntegrityErrors", 9}}
)

// DefaultWindow is how long a counter's rise counts as errors flowing
// when the far end's interval is not known: two of its default reads,
// so the switch port's half (read once a minute) and ours (read every
// second) overlap.
const DefaultWindow = 2 * time.Minute

// Config is what the tracker takes from the configuration.
type Config struct {
	// Window is how long a rise counts (two far-end intervals).
	Window    time.Duration
	Transport Transport
}

// mover follows one counter: its last value, where the current run of
// rises started, and when it last rose.
type mover struct {
	name    string
	path    string // the sample's file, to carry the mover over a replan
	has     bool
	last    uint64
	base    uint64
	movedAt time.Time
}

// observe takes a new value at t and says nothing; rise reports the
// counter's rise within the window ending at now.
func (m *mover) observe(v uint64, t time.Time, window time.Duration) {
	switch {
	case !m.has:
		m.has, m.last, m.base = true, v, v
	case v < m.last:
		// Reset (an operator cleared the counters): a fresh baseline.
		m.last, m.base, m.movedAt = v, v, time.Time{}
	case v > m.last:
		if m.movedAt.IsZero() || t.Sub(m.movedAt) > window {
			m.base = m.last // a new run of errors
		}
		m.last, m.movedAt = v, t
	}
}

func (m *mover) rise(now time.Time, window time.Duration) uint64 {
	if !m.has || m.movedAt.IsZero() || now.Sub(m.movedAt) > window {
		return 0
	}
	return m.last - m.base
}

// portMem is what the tracker keeps of one port.
type portMem struct {
	device string
	port   int
	// host follows the port's samples by index (nil where the sample is
	// no error counter).
	host []mover
	// peer follows the far end's error fields; peerGUID and peerSeq are
	// the reading they last took.
	peer     [len(peerErrorFields)]mover
	peerGUID string
	peerSeq  uint64
	// wasUp and downSince measure link-down episodes; episode is the last
	// one that ended, until its link-up event has said it.
	wasUp     bool
	downSince time.Time
	episode   Episode
	pending   bool
	verdict   Verdict
	in        Input
}

// Tracker keeps each port's evidence across cycles and judges it once
// per cycle. It is not safe for concurrent use: the runner's loop owns it.
// A steady cycle allocates nothing.
type Tracker struct {
	cfg   Config
	plan  uint64
	ports []portMem
	built bool
}

// NewTracker returns a tracker with the default window and transport.
func NewTracker() *Tracker {
	return &Tracker{cfg: Config{Window: DefaultWindow, Transport: Transport{Timeout: DefaultTimeout, Retries: DefaultRetries}}}
}

// Configure takes a (reloaded) configuration; what the ports remember
// stays.
func (t *Tracker) Configure(cfg Config) {
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	t.cfg = cfg
}

// Transport is the configured transport.
func (t *Tracker) Transport() Transport { return t.cfg.Transport }

// Observe takes one cycle's observation and judges every port again. It
// reports whether any port's verdict moved (the published snapshot must
// show it).
func (t *Tracker) Observe(obs *observe.Observation) bool {
	if !t.built || obs.Plan != t.plan {
		t.rebuild(obs)
	}
	changed := false
	for i, p := range obs.Ports {
		if i >= len(t.ports) {
			break
		}
		pm := &t.ports[i]
		if obs.StatePoll && p.Observed {
			t.episodes(pm, p.Up(), obs.Now)
		}
		t.inputs(pm, p, obs)
		old := pm.verdict
		Judge(&pm.in, &pm.verdict)
		if old != pm.verdict {
			changed = true
		}
	}
	return changed
}

// rebuild starts over with a new read plan: ports keep what they had by
// name (a replan after a reload must not reset windows or an episode).
func (t *Tracker) rebuild(obs *observe.Observation) {
	old := t.ports
	t.ports = make([]portMem, len(obs.Ports))
	for i, p := range obs.Ports {
		pm := &t.ports[i]
		pm.device, pm.port = p.Device.Name, p.Port.Num
		for j := range old {
			if old[j].device == pm.device && old[j].port == pm.port {
				*pm = old[j]
				break
			}
		}
		// A replan (a NIC gone, a reload) keeps every other port's runs of
		// errors: the movers follow their files, not their indexes.
		kept := pm.host
		pm.host = make([]mover, len(p.Samples))
		for si := range p.Samples {
			n := errorCounter(obs, &p.Samples[si])
			if n == "" {
				continue
			}
			pm.host[si] = mover{name: n, path: p.Samples[si].Path}
			for _, m := range kept {
				if m.name == n && m.path == p.Samples[si].Path {
					pm.host[si] = m
					break
				}
			}
		}
	}
	t.plan, t.built = obs.Plan, true
}

// errorCounter names the sample's error counter ("" when it is none).
func errorCounter(obs *observe.Observation, s *observe.Sample) string {
	for _, r := range s.Rows {
		if r < 0 || r >= len(obs.Counters) {
			continue
		}
		for _, n := range hostErrorCounters {
			if obs.Counters[r].Name == n {
				return n
			}
		}
	}
	return ""
}

// episodes measures link-down episodes from the state polls: down from
// the first poll that sees the port leave ACTIVE to the first that sees
// it back (so within one poll interval at either end). A port first seen
// down has no start, and a restart loses one in progress: neither is
// measured.
func (t *Tracker) episodes(pm *portMem, up bool, now time.Time) {
	switch {
	case pm.wasUp && !up:
		pm.downSince = now
	case up && !pm.wasUp && !pm.downSince.IsZero():
		pm.episode = Episode{DownFor: now.Sub(pm.downSince), Budget: t.cfg.Transport.Budget()}
		pm.pending, pm.downSince = true, time.Time{}
	}
	pm.wasUp = up
}

// inputs builds the port's Input from the observation.
func (t *Tracker) inputs(pm *portMem, p *observe.Port, obs *observe.Observation) {
	w := t.cfg.Window
	in := &pm.in
	in.Ethernet = p.Port.LinkLayer == topology.LinkLayerEthernet
	in.Up = p.Up()
	in.NHost, in.NPeer = 0, 0
	for si := range p.Samples {
		if si >= len(pm.host) || pm.host[si].name == "" {
			continue
		}
		m, s := &pm.host[si], &p.Samples[si]
		if s.Err == nil && obs.CounterTick && !s.At.IsZero() {
			m.observe(s.Value, s.At, w)
		}
		if r := m.rise(obs.Now, w); r > 0 && in.NHost < MaxCounters {
			in.HostErrors[in.NHost] = Evidence{Kind: KindCounter, Side: Host, Name: m.name, Rise: r, Window: w}
			in.NHost++
		}
	}
	in.Missing, in.MissingWhy = Complete, ""
	if !in.Ethernet {
		t.peerInputs(pm, in, obs.FarEnd, obs.Now)
	}
	in.Module, in.ModuleUp = nil, false
	in.LinkDownReason, in.LinkDownSub, in.LinkDownWords = "", "", ""
	if in.Ethernet {
		for i := range obs.LinkStory.Modules {
			r := &obs.LinkStory.Modules[i]
			if r.Device == pm.device && r.Port == pm.port && r.Err == nil {
				in.Module, in.ModuleUp = &r.Module, r.Up
				break
			}
		}
		in.LinkDownReason, in.LinkDownSub, in.LinkDownWords = p.LinkDown.Reason, p.LinkDown.SubReason, p.LinkDown.Words
		if in.LinkDownWords == "" {
			in.LinkDownWords = in.LinkDownReason
		}
	}
}

// peerInputs takes the switch port's error fields from the far end's
// reading: each new reading of the same peer is compared with the last.
func (t *Tracker) peerInputs(pm *portMem, in *Input, rd *farend.PeerReading, now time.Time) {
	w := t.cfg.Window
	switch {
	case rd == nil:
		in.Missing = FarEndOff
		return
	case rd.Unavailable != "":
		in.Missing, in.MissingWhy = FarEndUnavailable, rd.Unavailable
		return
	}
	pr := rd.Port(pm.device, pm.port)
	switch {
	case pr == nil || !pr.Found:
		in.Missing = PeerNotFound
		if pr != nil {
			in.MissingWhy = pr.Err
		}
		return
	case !pr.Read:
		in.Missing = PeerNotRead
		return
	}
	if pr.Peer.PortGUID != pm.peerGUID {
		// Another peer (a recabled port): its counters are its own.
		pm.peer = [len(peerErrorFields)]mover{}
		pm.peerGUID, pm.peerSeq = pr.Peer.PortGUID, 0
	}
	if pr.Seq != pm.peerSeq {
		pm.peerSeq = pr.Seq
		vals := pr.Counters.Values()
		for i, f := range peerErrorFields {
			pm.peer[i].name = f.name
			pm.peer[i].observe(vals[f.idx], pr.ReadAt, w)
		}
	}
	for i := range pm.peer {
		if r := pm.peer[i].rise(now, w); r > 0 && in.NPeer < MaxCounters {
			in.PeerErrors[in.NPeer] = Evidence{Kind: KindCounter, Side: Peer, Name: pm.peer[i].name, Rise: r, Window: w}
			in.NPeer++
		}
	}
}

// Verdict is device/port's verdict of the last cycle (nil when the port
// is not monitored). It is valid until the next Observe.
func (t *Tracker) Verdict(device string, port int) *Verdict {
	for i := range t.ports {
		if t.ports[i].device == device && t.ports[i].port == port {
			return &t.ports[i].verdict
		}
	}
	return nil
}

// TakeEpisode returns device/port's last ended link-down episode once:
// its link-up event says it.
func (t *Tracker) TakeEpisode(device string, port int) (Episode, bool) {
	for i := range t.ports {
		pm := &t.ports[i]
		if pm.device == device && pm.port == port && pm.pending {
			pm.pending = false
			return pm.episode, true
		}
	}
	return Episode{}, false
}
