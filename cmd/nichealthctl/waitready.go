package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/flagdoc"
	"github.com/nichealth/nichealthd/topology"
)

const waitReadyUsage = `wait-ready [--timeout 5m] [--json] [--bus-address ADDR]

Waits, like systemd-networkd-wait-online, until the node can take work:
nichealthd has completed its first poll, no condition off the ports holds
(a NIC function without its RDMA device or missing since the last boot,
fewer compute ports than the node should have), and no compute or storage
port has a condition in its verdict other than a non-fatal counter one.
So a port holds the gate while
  - its link is not up (DOWN, INIT, ARMED, Polling) or its card lacks ports
    against its peers;
  - it runs below its role peers' rate (while linkSanity.rateVsPeers is
    on), its PCIe link runs below its capability, or its fabric has no
    subnet manager;
  - any fatal condition covers it, a latched fatal counter breach
    (link_downed, ...) included: the running workload would fail on that
    link, so the node should not take work before someone has looked; once
    it is remediated, nichealthctl ack DEVICE PORT COUNTER opens the gate.
A latched non-fatal counter breach (an error rate above its threshold),
congestion and a saturated counter do not hold it: they tell of traffic on
a link that is up and usable, and a latch clears only when acknowledged, so
a burst of symbol errors while the links trained would otherwise keep the
gate shut for good. Far-end conditions (InfiniBandFarEndCheck: a breach
or a saturated counter of the switch port at the other end of the cable,
peer:* and peer-saturated:*, or the far end not being read) do not hold
it either: they are evidence about the cable for the fabric's team, and a
node cabled to a saturated or breached switch port can take work. They are
listed on stderr when the gate opens and stay WARNING in nichealthctl check.
Nor does a RoCE class (roce-lossy, roce-rx-starved, roce-pause-storm):
only traffic makes one.

Meant for ExecStartPre= of a job launcher or for node bring-up scripts.
While waiting it says on stderr, every 10 s, what it is still waiting for.

Exit status: 0 ready, 1 timed out (the ports not ready are listed),
2 usage error, 3 nichealthd never appeared on the system bus.`

// waiter polls the daemon until the node is ready. Intervals are fields so
// tests can shorten them.
type waiter struct {
	busAddress string
	timeout    time.Duration // 0 waits forever
	poll       time.Duration
	progress   time.Duration
	stderr     io.Writer
}

// waitOutcome is what wait-ready found; --json prints it.
type waitOutcome struct {
	Ready   bool     `json:"ready"`
	Waited  string   `json:"waited"`
	Pending []string `json:"pending"`
	// NotWaitedFor are the conditions that do not hold the gate (non-fatal
	// counter conditions, far-end conditions), as last seen.
	NotWaitedFor []string `json:"notWaitedFor,omitempty"`
	// Appeared is false when nichealthd was never seen on the bus.
	Appeared bool   `json:"appeared"`
	Error    string `json:"error,omitempty"`
}

func runWaitReady(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs, cf := newFlagSet("wait-ready", waitReadyUsage, stderr)
	timeout := flagdoc.Duration(fs, "timeout", 5*time.Minute, "give up after this long (0: wait forever)")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		return usageError(stderr, fs, "takes no arguments")
	}
	if *timeout < 0 {
		return usageError(stderr, fs, "--timeout must not be negative")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	w := waiter{busAddress: cf.busAddress, timeout: *timeout, poll: 500 * time.Millisecond, progress: 10 * time.Second, stderr: stderr}
	out := w.wait(ctx)
	code = exitOK
	switch {
	case out.Ready:
		if len(out.NotWaitedFor) > 0 {
			fmt.Fprintf(stderr, "nichealthctl wait-ready: ready; not waited for (non-fatal counter and far-end conditions, WARNING in nichealthctl check):\n")
			for _, c := range out.NotWaitedFor {
				fmt.Fprintf(stderr, "  %s\n", c)
			}
		}
	case !out.Appeared:
		code = exitUnreachable
		fmt.Fprintf(stderr, "nichealthctl wait-ready: nichealthd did not appear on the system bus within %s: %s\n", out.Waited, out.Error)
	default:
		code = exitFailed
		fmt.Fprintf(stderr, "nichealthctl wait-ready: not ready after %s; still waiting for:\n", out.Waited)
		for _, p := range out.Pending {
			fmt.Fprintf(stderr, "  %s\n", p)
		}
	}
	if cf.json {
		if err := writeJSON(stdout, out); err != nil {
			return fail(stderr, "wait-ready", err)
		}
	}
	return code
}

// wait returns when the node is ready, the timeout passes or ctx ends.
func (w waiter) wait(ctx context.Context) waitOutcome {
	start := time.Now()
	if w.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.timeout)
		defer cancel()
	}
	var (
		c        *dbusapi.Client
		out      waitOutcome
		lastSaid = start
	)
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	tick := time.NewTicker(w.poll)
	defer tick.Stop()
	for {
		var err error
		if c == nil {
			c, err = dbusapi.Dial(w.busAddress)
		}
		if c != nil {
			var pending, ignored []string
			pending, ignored, err = readiness(ctx, c)
			switch {
			case err == nil:
				out.Appeared, out.Pending, out.NotWaitedFor, out.Error = true, pending, ignored, ""
				if len(pending) == 0 {
					out.Ready = true
					out.Waited = time.Since(start).Round(time.Millisecond).String()
					return out
				}
			case errors.Is(err, dbusapi.ErrBusUnreachable):
				// The bus went away (restart of dbus): dial again.
				c.Close()
				c = nil
			case errors.Is(err, dbusapi.ErrDaemonNotRunning):
				out.Pending = []string{"nichealthd to appear on the system bus"}
			case ctx.Err() != nil:
				// The call was cut by the deadline: keep the last answer.
				err = nil
			default:
				out.Appeared = true
				out.Pending = []string{"an answer from nichealthd (" + err.Error() + ")"}
			}
		}
		if err != nil {
			out.Error = err.Error()
			if !out.Appeared {
				out.Pending = []string{"nichealthd to appear on the system bus"}
			}
		}
		if time.Since(lastSaid) >= w.progress {
			lastSaid = time.Now()
			fmt.Fprintf(w.stderr, "nichealthctl wait-ready: waiting for %s\n", strings.Join(out.Pending, "; "))
		}
		select {
		case <-ctx.Done():
			out.Waited = time.Since(start).Round(time.Millisecond).String()
			return out
		case <-tick.C:
		}
	}
}

// readiness lists what the node still lacks: the first poll, each
// compute or storage port whose verdict has a condition that holds the
// gate (holds), and the conditions off the ports. ignored are the
// conditions that do not hold it. It judges nothing itself: every reason
// is a condition of the daemon's verdict.
func readiness(ctx context.Context, c *dbusapi.Client) (pending, ignored []string, err error) {
	callCtx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	m, err := c.Manager(callCtx)
	if err != nil {
		return nil, nil, err
	}
	if !m.Ready {
		return []string{"nichealthd to complete its first poll"}, nil, nil
	}
	ports, err := c.Ports(callCtx)
	if err != nil {
		return nil, nil, err
	}
	for _, pv := range ports {
		if topology.Role(pv.Role) == topology.RoleManagement {
			continue
		}
		if pv.State == "" && pv.PhysState == "" {
			pending = append(pending, fmt.Sprintf("Port %s port %d: state not read yet", pv.Device, pv.Port))
			continue
		}
		var why []string
		for _, cv := range pv.Conditions {
			if !holds(cv) {
				ignored = append(ignored, fmt.Sprintf("%s/%d: %s", pv.Device, pv.Port, cv.Message))
				continue
			}
			msg := cv.Message
			if cv.Fatal && cv.Kind == string(event.KindCounterBreach) {
				msg += fmt.Sprintf(" (held until acknowledged: once remediated, nichealthctl ack %s %d %s)", pv.Device, pv.Port, counterOf(cv.Entity))
			}
			why = append(why, msg)
		}
		if len(pv.Conditions) == 0 && !pv.Healthy {
			// A verdict without its conditions (a daemon older than the
			// health model): its message is all there is.
			msg := pv.Message
			if msg == "" {
				msg = fmt.Sprintf("Port %s port %d: state %s, phys_state %s", pv.Device, pv.Port, pv.State, pv.PhysState)
			}
			why = append(why, msg)
		}
		if len(why) > 0 {
			pending = append(pending, strings.Join(why, " - "))
		}
	}
	// What no port shows: a compute NIC function on the bus without an
	// RDMA device or gone since the last boot, too few compute ports. A
	// node one NIC short is not ready, whatever its remaining ports say.
	for _, c := range offPort(m.Conditions, ports) {
		if !holds(c) {
			ignored = append(ignored, c.Message)
			continue
		}
		pending = append(pending, c.Message)
	}
	return pending, ignored, nil
}

// trafficKinds are the counter conditions that tell of traffic on a link
// rather than of whether it is usable: a latched breach of a rate or
// delta threshold, congestion, a RoCE class (only traffic makes one, and
// a node that waits for its gate carries none), a saturated counter.
var trafficKinds = []event.Kind{event.KindCounterBreach, event.KindCongestion, event.KindCounterSaturated, event.KindRoCE}

// holds reports whether a condition keeps the gate shut: every fatal one,
// and every non-fatal one but the counter conditions (see waitReadyUsage
// for why); never a far-end one. The far end is decided by the check that
// raised the condition, not by its kind or code: a far-end condition is
// non-fatal evidence about the cable (DESIGN.md section 13), whatever
// kind a later far-end rule raises, and the far-end check's own node
// condition (its helper not answering) says only that the switch side is
// not read.
func holds(c dbusapi.ConditionView) bool {
	if c.Check == event.FarEndCheck {
		return false
	}
	return c.Fatal || !slices.Contains(trafficKinds, event.Kind(c.Kind))
}

// counterOf is the counter a counter condition's entity names
// ("mlx5_1/1 link_downed").
func counterOf(entity string) string {
	f := strings.Fields(entity)
	if len(f) < 2 {
		return ""
	}
	return f[len(f)-1]
}
