package inventory

import (
	"fmt"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/topology/gpumeta"
)

// Expectation is how many active compute ports the node should have, at
// what rate at least, and where that comes from.
type Expectation struct {
	Ports    int
	RateGbps float64
	Why      string
}

// Known GPU models' NIC complement, as GPUd documents it
// (leptonai/gpud components/accelerator/nvidia/infiniband
// threshold_default.go, from the DGX user guides): A100 nodes at least
// one port at 200 Gb/s; H100, H200 and B200 nodes eight at 400 Gb/s.
var modelPorts = []struct {
	model    string // lower-case substring of the GPU product name
	ports    int
	rateGbps float64
	// perBoard: the number describes an 8-GPU HGX/DGX board and applies
	// only to a node that has at least 8 such GPUs (an H100 PCIe server
	// with two GPUs is not a DGX H100).
	perBoard bool
}{
	{"a100", 1, 200, false},
	{"h100", 8, 400, true},
	{"h200", 8, 400, true},
	{"b200", 8, 400, true},
}

// DefaultExpectation is the built-in expectation for the node's GPUs: the
// model most of them are (the longest name that matches, as GPUd matches),
// or ok false when no model is known or the node has too few GPUs of it.
func DefaultExpectation(gpus []gpumeta.GPU) (Expectation, bool) {
	count := map[int]int{}
	for _, g := range gpus {
		name := strings.ToLower(g.Name)
		best := -1
		for i, m := range modelPorts {
			if strings.Contains(name, m.model) && (best < 0 || len(m.model) > len(modelPorts[best].model)) {
				best = i
			}
		}
		if best >= 0 {
			count[best]++
		}
	}
	pick, n := -1, 0
	for i, c := range count {
		if c > n || c == n && i < pick {
			pick, n = i, c
		}
	}
	if pick < 0 {
		return Expectation{}, false
	}
	m := modelPorts[pick]
	if m.perBoard && n < 8 {
		return Expectation{}, false
	}
	return Expectation{Ports: m.ports, RateGbps: m.rateGbps,
		Why: fmt.Sprintf("the built-in default for %d %s GPUs: %d compute ports at %g Gb/s or more; set inventory.expectedComputePorts to change it",
			n, strings.ToUpper(m.model), m.ports, m.rateGbps)}, true
}

// ComputePort is one monitored compute port as the expected-ports check
// sees it.
type ComputePort struct {
	Device   string
	Port     int
	Active   bool // ACTIVE/LinkUp
	State    string
	RateGbps float64
}

// PortsInput is one judgement of the node's compute ports.
type PortsInput struct {
	Expect Expectation // Ports 0: nothing expected
	Ports  []ComputePort
	// Missing names compute functions that have no port at all (unbound,
	// no RDMA device), for the message.
	Missing []string
	Hold    time.Duration
	Now     time.Time
	Check   string // the check to raise under (the compute NICs' state check)
}

// JudgePorts counts the compute ports that are active at the expected
// rate or faster. Fewer than expected for longer than the hold (every port
// passes INIT while the subnet manager sweeps, DESIGN.md difference 4) is a
// fatal node-level condition naming the shortfall; it clears as soon as
// the count is met, or when nothing is expected any more.
func JudgePorts(mem *Memory, in PortsInput) (specs []event.Spec, changed bool) {
	pm := &mem.Ports
	good := 0
	for _, p := range in.Ports {
		if p.Active && p.RateGbps >= in.Expect.RateGbps {
			good++
		}
	}
	if in.Expect.Ports <= 0 || good >= in.Expect.Ports {
		if pm.ShortSince.IsZero() && !pm.Raised {
			return nil, false
		}
		var out []event.Spec
		if pm.Raised {
			why := fmt.Sprintf("%d compute ports active at %g Gb/s or more, %d expected", good, in.Expect.RateGbps, in.Expect.Ports)
			if in.Expect.Ports <= 0 {
				why = "no compute port count is expected any more"
			}
			out = append(out, portsSpec(pm.Check, true, "Compute ports: "+why, good, in.Expect))
		}
		*pm = PortsMemory{}
		return out, true
	}
	if pm.ShortSince.IsZero() {
		pm.ShortSince = in.Now
		changed = true
	}
	if pm.Raised || in.Now.Sub(pm.ShortSince) < in.Hold {
		return nil, changed
	}
	pm.Raised, pm.Check = true, in.Check
	msg := fmt.Sprintf("Only %d of %d expected compute ports are active at %g Gb/s or more (%s)", good, in.Expect.Ports, in.Expect.RateGbps, in.Expect.Why)
	var short []string
	for _, p := range in.Ports {
		switch {
		case !p.Active:
			short = append(short, fmt.Sprintf("%s port %d %s", p.Device, p.Port, orDefault(p.State, "not active")))
		case p.RateGbps < in.Expect.RateGbps:
			short = append(short, fmt.Sprintf("%s port %d at %g Gb/s", p.Device, p.Port, p.RateGbps))
		}
	}
	for _, m := range in.Missing {
		short = append(short, m+" has no port (no RDMA device)")
	}
	if len(short) > 0 {
		msg += "; short: " + strings.Join(short, ", ")
	}
	if n := in.Expect.Ports - len(in.Ports) - len(in.Missing); n > 0 {
		msg += fmt.Sprintf("; %d compute ports are not on the node at all (a card missing since it was built?)", n)
	}
	return []event.Spec{portsSpec(in.Check, false, msg, good, in.Expect)}, true
}

// ErrorCodePorts is the expected-ports condition's error code.
const ErrorCodePorts = "NIC_COMPUTE_PORTS_SHORT"

func portsSpec(check string, healthy bool, msg string, good int, e Expectation) event.Spec {
	kind := event.KindPortsShort
	if healthy {
		kind = event.KindPortsOK
	}
	return event.Spec{
		Kind: kind, CheckName: check, IsFatal: !healthy, IsHealthy: healthy,
		Message:   msg,
		ErrorCode: []string{ErrorCodePorts},
		Entities:  []event.Entity{{Type: event.EntityNICGroup, Value: "compute"}},
		Metadata: map[string]string{"activePorts": fmt.Sprint(good), "expectedPorts": fmt.Sprint(e.Ports),
			"expectedRateGbps": fmt.Sprintf("%g", e.RateGbps)},
		Condition: condition.OfNode(condition.ExpectedPortsName),
	}
}
