package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sim"
)

// target is one monitored port the run toggles.
type target struct {
	dev  string
	port int
}

// fault is one injected change and the event it must produce.
type fault struct {
	target
	down bool // true: ACTIVE -> DOWN (port-fatal); false: back up (port-recovered)
}

// wantKind is the event kind the fault must produce.
func (f fault) wantKind() event.Kind {
	if f.down {
		return event.KindPortFatal
	}
	return event.KindPortRecovered
}

// matches says whether ev is the daemon's answer to f.
func (f fault) matches(ev *event.Event) bool {
	return ev.Kind == f.wantKind() && ev.Device() == f.dev && ev.Port() == strconv.Itoa(f.port)
}

// faultTargets are the ports of monitored compute PFs: faults there always
// produce an event (a management NIC's or a VF's would not).
func faultTargets(devs []sim.DeviceInfo) []target {
	var out []target
	for _, d := range devs {
		if d.IsVF || d.Removed || d.ExpectedRole != topology.RoleCompute {
			continue
		}
		for p := 1; p <= d.Ports; p++ {
			out = append(out, target{d.Name, p})
		}
	}
	return out
}

// planFaults alternates over the targets: fault i toggles target i mod n,
// so the first round takes every port down, the next brings them back, and
// no port is toggled twice in a row.
func planFaults(targets []target, n int) []fault {
	if len(targets) == 0 {
		return nil
	}
	down := map[target]bool{}
	out := make([]fault, 0, n)
	for i := 0; i < n; i++ {
		t := targets[i%len(targets)]
		down[t] = !down[t]
		out = append(out, fault{target: t, down: down[t]})
	}
	return out
}

type latencyResult struct {
	jsonl, bus, pollToJSONL []time.Duration
	missedJSONL, missedBus  int
}

type latencyOptions struct {
	faults  int
	timeout time.Duration
	seed    uint64
	verbose io.Writer // per-fault lines; nil for none
}

// runLatency injects the faults one at a time. Before each it waits a
// random fraction of the poll interval, so faults land at every phase of
// the poll cycle rather than always just after (or before) a poll; then it
// writes the fault and waits for the matching event on every observer.
func runLatency(ctx context.Context, n *node, o latencyOptions) (*latencyResult, error) {
	targets := faultTargets(n.h.Devices())
	if len(targets) == 0 {
		return nil, fmt.Errorf("shape %s has no monitored compute port to fault", n.h.Shape())
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jsonlCh := make(chan arrival, 4096)
	tailErr := make(chan error, 1)
	go func() { tailErr <- tailJSONL(ctx, n.events, jsonlCh) }()
	var busCh chan arrival
	if n.busAddr != "" {
		busCh = make(chan arrival, 4096)
		closeBus, err := watchBus(ctx, n.busAddr, busCh)
		if err != nil {
			return nil, err
		}
		defer closeBus()
	}
	// Let the start-up baselines drain before the first fault.
	settle := time.After(3*n.interval + 200*time.Millisecond)
drain:
	for {
		select {
		case <-jsonlCh:
		case <-busCh:
		case <-settle:
			break drain
		}
	}

	rng := rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15))
	res := &latencyResult{}
	for i, f := range planFaults(targets, o.faults) {
		time.Sleep(time.Duration(rng.Int64N(int64(n.interval))))
		state, phys := "ACTIVE", "LinkUp"
		if f.down {
			state, phys = "DOWN", "Disabled"
		}
		t0 := time.Now()
		if err := n.h.SetPortState(f.dev, f.port, state, phys); err != nil {
			return res, fmt.Errorf("fault %d: %w", i, err)
		}
		gotJ, gotB := false, busCh == nil
		deadline := time.NewTimer(o.timeout)
	wait:
		for !gotJ || !gotB {
			select {
			case a := <-jsonlCh:
				if !gotJ && f.matches(&a.ev) {
					gotJ = true
					res.jsonl = append(res.jsonl, a.at.Sub(t0))
					res.pollToJSONL = append(res.pollToJSONL, a.at.Sub(a.ev.GeneratedTimestamp))
				}
			case a := <-busCh:
				if !gotB && f.matches(&a.ev) {
					gotB = true
					res.bus = append(res.bus, a.at.Sub(t0))
				}
			case err := <-tailErr:
				deadline.Stop()
				return res, err
			case <-deadline.C:
				if n.alive() != nil {
					return res, n.alive()
				}
				break wait
			case <-ctx.Done():
				deadline.Stop()
				return res, ctx.Err()
			}
		}
		deadline.Stop()
		if !gotJ {
			res.missedJSONL++
		}
		if !gotB {
			res.missedBus++
		}
		if o.verbose != nil {
			fmt.Fprintf(o.verbose, "fault %3d %s port %d %-6s jsonl=%v dbus=%v\n", i, f.dev, f.port, state, gotJ, gotB)
		}
	}
	return res, nil
}

// goalMet is the acceptance rule: every fault was seen and p99 is at most
// one poll interval plus 10 ms on every observer.
func goalMet(res *latencyResult, interval time.Duration, bus bool) bool {
	limit := interval + 10*time.Millisecond
	if res.missedJSONL > 0 || summarize(res.jsonl).p99 > limit || len(res.jsonl) == 0 {
		return false
	}
	if bus && (res.missedBus > 0 || len(res.bus) == 0 || summarize(res.bus).p99 > limit) {
		return false
	}
	return true
}
