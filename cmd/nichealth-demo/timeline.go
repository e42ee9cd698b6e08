package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/iblab"
)

// step is one change to the simulated host and what the daemon must say
// about it.
type step struct {
	kind   stepKind
	what   string
	do     func(d *story) error
	expect []expectation // empty for stepIgnored: nothing may be reported
}

type stepKind int

const (
	stepFault stepKind = iota
	stepRecovery
	stepIgnored
)

// expectation is one event a step must produce.
type expectation struct {
	check, device, port string
	verdict             string // "fatal", "non-fatal" or "healthy"
	mentions            string // a word the message must contain ("" = any)
}

func (x expectation) matches(ev event.Event) bool {
	verdict := "non-fatal"
	switch {
	case ev.IsHealthy:
		verdict = "healthy"
	case ev.IsFatal:
		verdict = "fatal"
	}
	return ev.CheckName == x.check && ev.Device() == x.device && ev.Port() == x.port &&
		verdict == x.verdict && strings.Contains(ev.Message, x.mentions)
}

func (s *story) steps() []step {
	steps := s.hostSteps()
	if s.lab != nil {
		steps = append(steps, step{stepFault,
			"the switch port at the far end of mlx5_0's cable (ibsw-leaf1 port 17) counts 55 symbol errors: our optic or cable, which our own sysfs never shows",
			func(s *story) error {
				return s.lab.PerformanceSet(iblab.Leaf1, iblab.GPUA017Port, "PortCounters.SymbolErrorCounter", 55)
			}, []expectation{
				// 55 within the 1 s interval: above symbol_error's 10/s,
				// named with its rule; symbol_error_fatal's 120/hour waits
				// for an hour of reads, as the local counters' does (never
				// extrapolated from one read).
				{check: event.FarEndCheck, device: "mlx5_0", port: "1", verdict: "non-fatal", mentions: "Direct-attached ibsw-leaf1 port 17: [SymbolErrorCounter == 55] symbol_error - "},
			}},
			// The second half of DESIGN.md section 15's direction rule:
			// with the switch's receiver still erring, errors at our own
			// receiver too make it both ways, and the part both ends share
			// is the cable. The RoCE module and link-down verdicts are not
			// shown: the production nichealthd reads transceivers and the
			// link-down reason over netlink, which a simulated host cannot
			// answer (nichealth-sim usage, the (*) commands).
			step{stepFault,
				"mlx5_0's own receiver counts 40 symbol errors too: its cable's verdict turns from from-host to both, suspect the cable",
				func(s *story) error { return s.h.AddCounter("mlx5_0", 1, "counters/symbol_error", 40) },
				[]expectation{
					{check: event.InfiniBandDegradationCheck, device: "mlx5_0", port: "1", verdict: "non-fatal", mentions: "symbol_error"},
				}})
	}
	return steps
}

// hostSteps are the faults of the simulated host itself.
func (s *story) hostSteps() []step {
	return []step{
		{stepFault, "compute port mlx5_3 port 1 goes DOWN (cable pulled); its link_downed counter counts it", func(s *story) error {
			if err := s.h.SetPortState("mlx5_3", 1, "DOWN", "Disabled"); err != nil {
				return err
			}
			return s.h.AddCounter("mlx5_3", 1, "counters/link_downed", 1)
		}, []expectation{
			{check: event.InfiniBandStateCheck, device: "mlx5_3", port: "1", verdict: "fatal", mentions: "DOWN"},
			{check: event.InfiniBandStateCheck, device: "mlx5_3", port: "1", verdict: "fatal", mentions: "link_downed"},
			// No card anomaly besides: the DOWN port is its own fatal
			// condition, and one cable pull is one (DESIGN.md difference 4).
		}},
		{stepRecovery, "the cable is reseated: mlx5_3 port 1 is ACTIVE again (its link_downed breach stays latched)", func(s *story) error {
			return s.h.SetPortState("mlx5_3", 1, "ACTIVE", "LinkUp")
		}, []expectation{
			{check: event.InfiniBandStateCheck, device: "mlx5_3", port: "1", verdict: "healthy", mentions: "healthy"},
		}},
		{stepFault, "storage RoCE port mlx5_8 is disabled and its netdev goes down", func(s *story) error {
			if err := s.h.SetPortState("mlx5_8", 1, "DOWN", "Disabled"); err != nil {
				return err
			}
			return s.h.SetOperstate("enp65s0f0np0", "down")
		}, []expectation{
			{check: event.EthernetStateCheck, device: "mlx5_8", port: "1", verdict: "fatal", mentions: "DOWN"},
		}},
		{stepFault, "a dirty fibre on mlx5_5: 5000 symbol errors at once (threshold 10/s)", func(s *story) error {
			return s.h.AddCounter("mlx5_5", 1, "counters/symbol_error", 5000)
		}, []expectation{
			{check: event.InfiniBandDegradationCheck, device: "mlx5_5", port: "1", verdict: "non-fatal", mentions: "symbol_error"},
		}},
		{stepIgnored, "management NIC mlx5_12 goes DOWN: it carries the default route, so it is never alarmed on", func(s *story) error {
			return s.h.SetPortState("mlx5_12", 1, "DOWN", "Disabled")
		}, nil},
		{stepFault, "compute NIC mlx5_6 falls off the PCIe bus (reported after 3 enumerations without it)", func(s *story) error {
			return s.h.RemoveDevice("mlx5_6")
		}, []expectation{
			{check: event.InfiniBandStateCheck, device: "mlx5_6", verdict: "fatal", mentions: "disappeared"},
		}},
	}
}

// stepTimeout bounds the wait for a step's events: removal takes three
// enumerations, and a loaded machine may stretch a poll.
func (s *story) stepTimeout() time.Duration { return 10*time.Second + 30*s.opts.interval }

// play injects one step and waits for what it must produce; events nobody
// expected are shown too, so nothing the daemon says is hidden.
func (s *story) play(st step) error {
	label := map[stepKind]string{stepFault: "fault", stepRecovery: "recovery", stepIgnored: "no alarm"}[st.kind]
	s.say("%s: %s", label, st.what)
	switch st.kind {
	case stepFault:
		s.faults++
	case stepRecovery:
		s.recoveries++
	case stepIgnored:
		s.ignored++
	}
	at := time.Now()
	if err := st.do(s); err != nil {
		return err
	}
	all, err := s.await(at, st.kind, st.expect)
	if all && st.kind == stepFault {
		s.faultsDetected++
	}
	return err
}

// await pairs the events that arrive with want and reports whether all
// came. With nothing to want it waits three poll intervals (measured on the
// daemon's own poll clock when D-Bus is there) and reports anything that
// came.
func (s *story) await(at time.Time, kind stepKind, want []expectation) (bool, error) {
	met := make([]bool, len(want))
	left := len(want)
	s.expected += len(want)
	timeout := time.After(s.stepTimeout())
	var quiet <-chan struct{}
	if left == 0 {
		quiet = s.pollsAfter(at, 3)
	}
	for {
		select {
		case a, ok := <-s.events:
			if !ok {
				return false, fmt.Errorf("nichealthd closed its event stream")
			}
			if a.raw != "" {
				s.printf("   %s\n", a.raw)
				continue
			}
			matched := false
			for i, x := range want {
				if !met[i] && x.matches(a.ev) {
					met[i], matched = true, true
					left--
					lat := max(a.ev.GeneratedTimestamp.Sub(at), 0)
					if kind == stepFault {
						s.latencies = append(s.latencies, lat)
					}
					s.detected++
					s.show("   ", a.ev, s.paint("32", fmt.Sprintf("✓ %4dms ", lat.Milliseconds())))
					if left == 0 {
						// One more poll, so what the same change causes a
						// cycle later is shown under it, not under the next.
						quiet = s.pollsAfter(time.Now(), 1)
					}
					break
				}
			}
			if !matched {
				mark := "  also   "
				if kind == stepIgnored {
					mark = s.paint("31", "✗ unexpected ")
				}
				s.show("   ", a.ev, mark)
			}
		case <-quiet:
			if len(want) == 0 {
				s.printf("   %s no event after 3 polls, as designed\n", s.paint("32", "✓"))
			}
			return true, nil
		case <-timeout:
			for i, x := range want {
				if !met[i] {
					s.printf("   %s not reported within %v: %s %s %s/%s\n", s.paint("31", "✗"), s.stepTimeout(), x.verdict, x.check, x.device, x.port)
				}
			}
			return false, nil
		}
	}
}

// pollsAfter is closed once the daemon has completed n polls that started
// after t.
func (s *story) pollsAfter(t time.Time, n int) <-chan struct{} {
	done := make(chan struct{})
	target := t.Add(time.Duration(n) * s.opts.interval)
	go func() {
		defer close(done)
		if s.client == nil {
			time.Sleep(time.Until(target) + s.opts.interval)
			return
		}
		tick := time.NewTicker(s.opts.interval / 5)
		defer tick.Stop()
		for range tick.C {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			m, err := s.client.Manager(ctx)
			cancel()
			if err != nil || !time.UnixMicro(int64(m.LastPollUSec)).Before(target) {
				return
			}
		}
	}()
	return done
}
