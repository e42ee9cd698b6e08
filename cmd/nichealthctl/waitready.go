package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/topology"
)

const waitReadyUsage = `wait-ready [--timeout 5m] [--json] [--bus-address ADDR]

Waits, like systemd-networkd-wait-online, until nichealthd has completed its
first poll, every compute and storage port is healthy in its verdict (a
port slower than its role peers is not, while linkSanity.rateVsPeers is
on), and no condition off the ports holds (a NIC
function without its RDMA device or missing since the last boot, fewer
compute ports than the node should have). Meant for ExecStartPre= of a job launcher or
for node bring-up scripts. While waiting it says on stderr, every 10 s,
what it is still waiting for.

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
	// Appeared is false when nichealthd was never seen on the bus.
	Appeared bool   `json:"appeared"`
	Error    string `json:"error,omitempty"`
}

func runWaitReady(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs, cf := newFlagSet("wait-ready", waitReadyUsage, stderr)
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long (0: wait forever)")
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
			var pending []string
			pending, err = readiness(ctx, c)
			switch {
			case err == nil:
				out.Appeared, out.Pending, out.Error = true, pending, ""
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

// readiness lists what the node still lacks: the first poll, and each
// compute or storage port the daemon does not call healthy. It judges
// nothing itself: a port slower than its role peers is the daemon's link
// sanity finding on that port (rateVsPeers), which makes it not healthy.
func readiness(ctx context.Context, c *dbusapi.Client) ([]string, error) {
	callCtx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	m, err := c.Manager(callCtx)
	if err != nil {
		return nil, err
	}
	if !m.Ready {
		return []string{"nichealthd to complete its first poll"}, nil
	}
	ports, err := c.Ports(callCtx)
	if err != nil {
		return nil, err
	}
	var pending []string
	for _, pv := range ports {
		if topology.Role(pv.Role) == topology.RoleManagement {
			continue
		}
		switch {
		case pv.State == "" && pv.PhysState == "":
			pending = append(pending, fmt.Sprintf("Port %s port %d: state not read yet", pv.Device, pv.Port))
		case !pv.Healthy:
			why := pv.Message
			if why == "" {
				why = fmt.Sprintf("Port %s port %d: state %s, phys_state %s", pv.Device, pv.Port, pv.State, pv.PhysState)
			}
			if lb := pv.LatchedBreaches(); len(lb) > 0 {
				why += " (latched: " + strings.Join(lb, ", ") + ")"
			}
			pending = append(pending, why)
		}
	}
	// What no port shows: a compute NIC function on the bus without an
	// RDMA device or gone since the last boot, too few compute ports. A
	// node one NIC short is not ready, whatever its remaining ports say.
	for _, c := range offPort(m.Conditions, ports) {
		pending = append(pending, c.Message)
	}
	return pending, nil
}
