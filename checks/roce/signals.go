package roce

import (
	"strconv"

	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology"
)

// Signal is one counter the classes read, by its index in Signals.
type Signal int

// The signals, with the names the kernel's mlx5 counters documentation
// gives them. The first ten are the RDMA device's per-port hw_counters
// files, the rest the netdev's driver statistics (ethtool -S).
const (
	ECNMarked          Signal = iota // np_ecn_marked_roce_packets: ECN-marked RoCE packets received (notification point)
	CNPSent                          // np_cnp_sent: CNPs sent back to the senders
	CNPHandled                       // rp_cnp_handled: CNPs received and acted on (reaction point)
	CNPIgnored                       // rp_cnp_ignored: CNPs received and ignored
	OutOfSequence                    // out_of_sequence: packets received out of sequence
	PacketSeqErr                     // packet_seq_err: NAK sequence errors received
	ImpliedNakSeqErr                 // implied_nak_seq_err: ACKs with a PSN beyond what was expected
	DuplicateRequest                 // duplicate_request: retransmitted requests received
	LocalAckTimeoutErr               // local_ack_timeout_err: ACK timeouts that retransmitted
	OutOfBuffer                      // out_of_buffer: packets dropped for lack of a receive WQE
	RxDiscardsPhy                    // rx_discards_phy: packets the port dropped for lack of buffer
	StormWarning                     // tx_pause_storm_warning_events
	StormError                       // tx_pause_storm_error_events
	prioBase
)

// Priorities are the 802.1Qbb priorities.
const Priorities = 8

// Per priority, four driver statistics follow prioBase.
const (
	rxPause = iota
	txPause
	rxPauseDuration
	txPauseDuration
	perPrio
)

// NumSignals is how many counters one port may have.
const NumSignals = int(prioBase) + Priorities*perPrio

func prio(kind, p int) Signal { return prioBase + Signal(p*perPrio+kind) }

// RowPrefix starts the name of every RoCE row of the read plan.
const RowPrefix = "roce:"

var names = func() [NumSignals]string {
	var n [NumSignals]string
	copy(n[:], []string{"np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled", "rp_cnp_ignored",
		"out_of_sequence", "packet_seq_err", "implied_nak_seq_err", "duplicate_request", "local_ack_timeout_err",
		"out_of_buffer", "rx_discards_phy", "tx_pause_storm_warning_events", "tx_pause_storm_error_events"})
	for p := range Priorities {
		ps := strconv.Itoa(p)
		n[prio(rxPause, p)] = "rx_prio" + ps + "_pause"
		n[prio(txPause, p)] = "tx_prio" + ps + "_pause"
		n[prio(rxPauseDuration, p)] = "rx_prio" + ps + "_pause_duration"
		n[prio(txPauseDuration, p)] = "tx_prio" + ps + "_pause_duration"
	}
	return n
}()

// Name is the signal's counter name.
func (s Signal) Name() string { return names[s] }

// hwCounter says the signal is an hw_counters file of the RDMA port.
func (s Signal) hwCounter() bool { return s <= OutOfBuffer }

// Path is where the observer reads it, in the counter table's grammar.
func (s Signal) Path() observe.CounterPath {
	if s.hwCounter() {
		return observe.CounterPath("hw_counters/" + s.Name())
	}
	return observe.CounterPath(observe.EthtoolPrefix + s.Name())
}

// Rows are the read plan's rows for the signals, Ethernet ports only. The
// runner appends them after the counter table's rows; the counter check
// ignores rows past its own, and this check finds its rows by name.
func Rows() []observe.Counter {
	out := make([]observe.Counter, NumSignals)
	for i := range NumSignals {
		s := Signal(i)
		out[i] = observe.Counter{Name: RowPrefix + s.Name(), Path: s.Path(), LinkLayer: topology.LinkLayerEthernet}
	}
	return out
}

// signalOf is the signal a row name stands for.
var signalOf = func() map[string]Signal {
	m := make(map[string]Signal, NumSignals)
	for i := range NumSignals {
		m[RowPrefix+Signal(i).Name()] = Signal(i)
	}
	return m
}()

// set is a set of signals.
type set uint64

func (s set) has(x Signal) bool { return s&(1<<x) != 0 }
func (s *set) add(x Signal)     { *s |= 1 << x }
