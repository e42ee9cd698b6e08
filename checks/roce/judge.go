package roce

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/checks/counters"
)

// The classes, which are also their conditions' error codes.
const (
	Congested  = "roce-congested"
	Lossy      = "roce-lossy"
	RxStarved  = "roce-rx-starved"
	PauseStorm = "roce-pause-storm"
)

// Classes are every class, in the order views list them.
var Classes = [...]string{Congested, Lossy, RxStarved, PauseStorm}

// Informational reports whether a class is shown without being a
// condition (DESIGN.md section 16: congestion handled is the fabric
// working).
func Informational(class string) bool { return class == Congested }

// Thresholds say when a window puts a port in a class; each class clears
// after a full window below half of its threshold. config.RoCEConfig
// documents the defaults.
type Thresholds struct {
	Window             time.Duration
	CongestedPerSecond float64
	LossyPerSecond     float64
	RxStarvedPerSecond float64
	PauseStormEvents   float64
	PauseStormPercent  float64
}

// Direction of a pause: rx, the port was told to stop sending; tx, the
// port told its peer to stop.
const (
	RX = 0
	TX = 1
)

// DirectionName is "rx" or "tx".
func DirectionName(d int) string {
	if d == TX {
		return "tx"
	}
	return "rx"
}

// Window is one judged window of a port: how much each signal moved over
// it, which signals were read at both of its ends, and the port rate.
type Window struct {
	Elapsed  time.Duration
	Have     set
	Delta    [NumSignals]uint64
	PortGbps float64
}

// PerSec is a signal's rate over the window.
func (w *Window) PerSec(s Signal) float64 {
	if w.Elapsed <= 0 {
		return 0
	}
	return float64(w.Delta[s]) / w.Elapsed.Seconds()
}

func (w *Window) sum(ss ...Signal) float64 {
	var v float64
	for _, s := range ss {
		v += w.PerSec(s)
	}
	return v
}

var (
	congestionSignals = []Signal{ECNMarked, CNPSent, CNPHandled}
	lossSignals       = []Signal{OutOfSequence, PacketSeqErr, ImpliedNakSeqErr, LocalAckTimeoutErr, DuplicateRequest}
)

// Congestion is the congestion signal: ECN-marked RoCE packets received
// and CNPs sent and handled, per second.
func (w *Window) Congestion() float64 { return w.sum(congestionSignals...) }

// Loss is the loss signal: sequence errors and retransmission triggers
// per second.
func (w *Window) Loss() float64 { return w.sum(lossSignals...) }

// Storms are the pause storm events (warning and error) of the window.
func (w *Window) Storms() uint64 { return w.Delta[StormWarning] + w.Delta[StormError] }

// PausePercent is the share of the window priority p was paused in a
// direction (its pause duration is in microseconds), at most 100.
func (w *Window) PausePercent(dir, p int) float64 {
	kind := rxPauseDuration
	if dir == TX {
		kind = txPauseDuration
	}
	if w.Elapsed <= 0 {
		return 0
	}
	pct := float64(w.Delta[prio(kind, p)]) / float64(w.Elapsed.Microseconds()) * 100
	return math.Min(pct, 100)
}

// WorstPause is the priority and direction paused longest, and for how
// much of the window (prio -1 when nothing was paused).
func (w *Window) WorstPause() (dir, p int, pct float64) {
	dir, p = RX, -1
	for d := RX; d <= TX; d++ {
		for q := range Priorities {
			if v := w.PausePercent(d, q); v > pct {
				dir, p, pct = d, q, v
			}
		}
	}
	return dir, p, pct
}

// stormPriority is the priority this port sent pauses on longest (by
// pause time, else by pause frames): where a tx storm is.
func (w *Window) stormPriority() int {
	at, best := -1, 0.0
	for q := range Priorities {
		if v := w.PausePercent(TX, q); v > best {
			at, best = q, v
		}
	}
	if at >= 0 {
		return at
	}
	var most uint64
	for q := range Priorities {
		if n := w.Delta[prio(txPause, q)]; n > most {
			at, most = q, n
		}
	}
	return at
}

// LostBandwidth is what the pauses this port received cost it: the
// priority paused longest, as Gb/s and percent of the port rate, as
// port_xmit_wait's ticks are (counters.LostBandwidth: each microsecond
// paused is one microsecond of the port rate not sent). prio is -1 when
// nothing was paused.
func (w *Window) LostBandwidth() (gbps, pct float64, p int) {
	p, best := -1, 0.0
	for q := range Priorities {
		if v := w.PausePercent(RX, q); v > best {
			p, best = q, v
		}
	}
	if p < 0 || w.PortGbps <= 0 {
		return 0, 0, p
	}
	pausedUsPerSec := w.PerSec(prio(rxPauseDuration, p))
	gbps, pct = counters.LostBandwidth(pausedUsPerSec, w.PortGbps*1e9/8/1e6, w.PortGbps)
	return gbps, math.Min(pct, 100), p
}

// ClassSet is a set of classes (bit i: Classes[i]).
type ClassSet uint8

func bit(class string) ClassSet {
	for i, c := range Classes {
		if c == class {
			return 1 << i
		}
	}
	return 0
}

// Has reports whether the set holds class.
func (s ClassSet) Has(class string) bool { return s&bit(class) != 0 }

// List is the set's classes, in Classes' order.
func (s ClassSet) List() []string {
	var out []string
	for i, c := range Classes {
		if s&(1<<i) != 0 {
			out = append(out, c)
		}
	}
	return out
}

// hold is the hysteresis of every class: raised above the threshold,
// held until a full window is below half of it.
func hold(raised bool, v, threshold float64) bool {
	if raised {
		return v >= threshold/2 && v > 0
	}
	return v > threshold
}

// Classify is the classes of a judged window, given those the port was in
// (hysteresis).
func Classify(w *Window, th *Thresholds, was ClassSet) ClassSet {
	var now ClassSet
	lossy := hold(was.Has(Lossy), w.Loss(), th.LossyPerSecond)
	if lossy {
		now |= bit(Lossy)
	}
	// Congestion handled means no loss: a port losing packets while it
	// is marked is lossy, whatever the marks say.
	if !lossy && hold(was.Has(Congested), w.Congestion(), th.CongestedPerSecond) {
		now |= bit(Congested)
	}
	if hold(was.Has(RxStarved), w.PerSec(OutOfBuffer), th.RxStarvedPerSecond) {
		now |= bit(RxStarved)
	}
	_, _, pct := w.WorstPause()
	if hold(was.Has(PauseStorm), float64(w.Storms()), th.PauseStormEvents) || hold(was.Has(PauseStorm), pct, th.PauseStormPercent) {
		now |= bit(PauseStorm)
	}
	return now
}

func rate(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// listRates names the signals of a list that moved, with their rates; the
// ones not read on this port are said as such.
func (w *Window) listRates(ss []Signal) string {
	var b strings.Builder
	var missing []string
	for _, s := range ss {
		if !w.Have.has(s) {
			missing = append(missing, s.Name())
			continue
		}
		if w.Delta[s] == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s.Name() + " " + rate(w.PerSec(s)) + "/s")
	}
	if b.Len() == 0 {
		b.WriteString("none moved")
	}
	if len(missing) > 0 {
		b.WriteString("; not read on this port: " + strings.Join(missing, ", "))
	}
	return b.String()
}

// Evidence is what a class was judged on, one line.
func Evidence(class string, w *Window) string {
	switch class {
	case Congested:
		return fmt.Sprintf("ECN marks and CNPs %s/s (%s), loss %s/s", rate(w.Congestion()), w.listRates(congestionSignals), rate(w.Loss()))
	case Lossy:
		return fmt.Sprintf("sequence errors and retransmissions %s/s (%s); ECN marks and CNPs %s/s; rx_discards_phy %s/s",
			rate(w.Loss()), w.listRates(lossSignals), rate(w.Congestion()), rate(w.PerSec(RxDiscardsPhy)))
	case RxStarved:
		return fmt.Sprintf("out_of_buffer %s/s; rx_discards_phy %s/s; sequence errors %s/s", rate(w.PerSec(OutOfBuffer)), rate(w.PerSec(RxDiscardsPhy)), rate(w.Loss()))
	case PauseStorm:
		dir, p, pct := w.stormWhere()
		s := fmt.Sprintf("%d pause storm events (warning %d, error %d)", w.Storms(), w.Delta[StormWarning], w.Delta[StormError])
		if p >= 0 {
			s += fmt.Sprintf("; priority %d %s paused %s%% of the window", p, DirectionName(dir), rate(pct))
		}
		return s
	}
	return ""
}

// stormWhere is the priority and direction of a storm: the priority this
// port sent pauses on when the NIC counted storm events (they are tx
// storms), else the priority paused longest.
func (w *Window) stormWhere() (dir, p int, pct float64) {
	if w.Storms() > 0 {
		if q := w.stormPriority(); q >= 0 {
			return TX, q, w.PausePercent(TX, q)
		}
		return TX, -1, 0
	}
	return w.WorstPause()
}

// Reason says what a class means on this port.
func Reason(class string, w *Window) string {
	switch class {
	case Congested:
		return "ECN marks and CNPs rising with no loss: the fabric's congestion control (DCQCN) is working"
	case Lossy:
		if w.Congestion() > 0 {
			return "sequence errors and retransmissions while ECN and CNPs are active: congestion control reacts, but the RoCE priority is not lossless"
		}
		return "sequence errors and retransmissions with no congestion signal: the lossless configuration is broken somewhere on the path"
	case RxStarved:
		return "packets dropped for lack of a posted receive WQE: the host does not keep up, not the network"
	case PauseStorm:
		dir, p, _ := w.stormWhere()
		at := "a priority"
		if p >= 0 {
			at = "priority " + strconv.Itoa(p)
		}
		if dir == TX {
			return "this port kept pausing its switch port on " + at + " (tx): its receiver stopped draining, and the pause spreads back through the fabric"
		}
		return "the switch port kept this port paused on " + at + " (rx): something beyond the switch port is not draining"
	}
	return ""
}

// Fix says what to check.
func Fix(class string, w *Window) string {
	switch class {
	case Congested:
		return "nothing to fix on this node; if jobs are slow, look at traffic placement (incast, rail alignment)"
	case Lossy:
		return "check on this NIC and its switch port: PFC enabled on the RoCE priority (mlnx_qos -i <netdev>; the switch's PFC configuration and pause counters), ECN enabled on the switch's RoCE traffic class, the same trust mode (dscp or pcp) on both ends, and the switch buffer configuration of the lossless priority; when the rail's other ports are lossy too it is the switch"
	case RxStarved:
		return "look at the host: the application on this NIC posting receive WQEs (receive queue depth), CPU saturation on the NIC's NUMA node, and the IRQ affinity of the NIC's completion vectors (irqbalance, set_irq_affinity); the fabric is not at fault"
	case PauseStorm:
		if dir, _, _ := w.stormWhere(); dir == RX {
			return "look at the switch port and downstream of it: the switch's pause and buffer counters on that priority; a receiver elsewhere in the fabric is pausing"
		}
		return "find why this host stopped receiving (a hung process holding its receive queues, a PCIe or memory stall, the kernel log); mlx5's stall prevention drops the priority's traffic when tx_pause_storm_error_events counts"
	}
	return ""
}
