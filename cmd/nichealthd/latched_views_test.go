package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
)

// metricValue is the value of the first sample of page whose line starts
// with prefix (ok false when there is none).
func metricValue(page, prefix string) (float64, bool) {
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, prefix) {
			f := strings.Fields(l)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			return v, err == nil
		}
	}
	return 0, false
}

// portRow is the counter table row of counter in nichealthctl port's
// output, as fields.
func portRow(out, counter string) []string {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[0] == counter {
			return f
		}
	}
	return nil
}

// Issue 31 row 6 on the built daemon, in every view: a burst of 5000
// symbol errors latches symbol_error (5000/sec at the breach) and a
// link-down latches link_downed. Seconds later /metrics and nichealthctl
// port show their live rates (0: nothing moved since), the latches hold,
// and every message about a latch says what latched, when and at what
// reading, never the burst's rate as if it were now. The Nagios line
// names each latched counter once, under its port's one state.
func TestViews_Issue31_6_LatchedRatesAreLiveAndSaidOnce(t *testing.T) {
	t.Parallel()
	v := newViewNode(t)
	v.start()
	v.waitReady()
	skip := v.mark()
	v.h.AddCounter("mlx5_4", 1, "counters/symbol_error", 5000)
	v.h.AddCounter("mlx5_1", 1, "counters/link_downed", 1)
	se := v.waitEventAfter(skip, "symbol_error breach", counterBreach("mlx5_4", "symbol_error"))
	ld := v.waitEventAfter(skip, "link_downed breach", counterBreach("mlx5_1", "link_downed"))
	if !strings.HasSuffix(se.Message, "(value=5000, delta=5000, rate=5000.00/sec)") || ld.CheckName != event.InfiniBandStateCheck {
		t.Fatalf("breaches %q (%s), %q (%s)", se.Message, se.CheckName, ld.Message, ld.CheckName)
	}
	seSince := se.GeneratedTimestamp.UTC().Format(time.RFC3339)

	// /metrics: the live rate falls to 0 while the breach stays latched.
	rate := `nichealth_hwcounter_rate{device="mlx5_4",port="1",counter="symbol_error",unit="second"}`
	breached := `nichealth_hwcounter_breached{device="mlx5_4",port="1",counter="symbol_error"}`
	deadline := time.Now().Add(waitDeadline)
	for {
		page := v.scrape()
		r, okR := metricValue(page, rate)
		b, okB := metricValue(page, breached)
		if okR && okB && r == 0 && b == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics never showed the latched symbol_error's live rate: %s = %v, %s = %v", rate, r, breached, b)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// nichealthctl port: live rates in the table, the latch in the message.
	var out string
	deadline = time.Now().Add(waitDeadline)
	for {
		out, _ = v.ctl("port", "mlx5_1", "1")
		if f := portRow(out, "link_downed"); len(f) > 2 && f[2] == "0/sec" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nichealthctl port never showed link_downed's live rate:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, _ = v.ctl("port", "mlx5_4", "1")
	if f := portRow(out, "symbol_error"); len(f) < 3 || f[2] != "0/sec" || !strings.Contains(out, "BREACHED since") {
		t.Fatalf("nichealthctl port mlx5_4 1, symbol_error row %q:\n%s", f, out)
	}
	wantMsg := "Port mlx5_4 port 1: symbol_error - PHY bit errors before FEC - physical layer degradation: latched since " + seSince +
		" (at the breach: value=5000, delta=5000, rate=5000.00/sec)"
	if !strings.Contains(out, "Message: "+wantMsg+"\n") {
		t.Fatalf("nichealthctl port's message, want %q:\n%s", wantMsg, out)
	}

	// D-Bus: the port's message and conditions say the same.
	pv, err := v.cl.Port(ctxT(t), "mlx5_4", 1)
	if err != nil {
		t.Fatal(err)
	}
	if pv.Message != wantMsg || len(pv.Conditions) != 1 || pv.Conditions[0].Message != wantMsg {
		t.Fatalf("D-Bus port message %q, conditions %+v", pv.Message, pv.Conditions)
	}

	// The Nagios line: each latch once, each port's state once.
	check, code := v.ctl("check")
	first := strings.SplitN(check, "\n", 2)[0]
	if code != 2 || strings.Count(first, "CRITICAL") != 2 || strings.Count(first, "link_downed") != 1 ||
		strings.Count(first, "symbol_error") != 1 || strings.Count(first, ":WARNING") != 1 ||
		!strings.Contains(first, ":CRITICAL - Port mlx5_1 port 1: link_downed - Port Training State Machine failed - QP disconnect: latched since ") ||
		strings.Contains(first, "rate=5000.00/sec)") && !strings.Contains(first, "(at the breach: value=5000, delta=5000, rate=5000.00/sec)") {
		t.Fatalf("nichealthctl check (exit %d), first line:\n%s", code, first)
	}
	status, _ := v.ctl("status")
	if !strings.Contains(status, wantMsg) || strings.Contains(status, "(value=5000, delta=5000, rate=5000.00/sec)") {
		t.Fatalf("nichealthctl status:\n%s", status)
	}
}
