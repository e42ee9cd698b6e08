package readcore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/mad"
	"github.com/nichealth/nichealthd/mad/wire"
)

// pma answers as a PMA does: PortCountersExtended (with or without the
// error counters, as asked) and PortCounters, or fails one of them.
type pma struct {
	pc                wire.PortCounters
	ext               wire.PortCountersExt
	errExt, errPC     error
	askedExt, askedPC int
	withErrors        bool
}

func (p *pma) PortCounters(context.Context, wire.Local, int, int, time.Duration) (wire.PortCounters, error) {
	p.askedPC++
	return p.pc, p.errPC
}

func (p *pma) PortCountersExt(_ context.Context, _ wire.Local, _, _ int, withErrors bool, _ time.Duration) (wire.PortCountersExt, error) {
	p.askedExt++
	p.withErrors = withErrors
	x := p.ext
	if !withErrors {
		x.Errors = nil
	}
	return x, p.errExt
}

// cpi is a ClassPortInfo that offers PortCountersExtended
// (CapabilityMask bit 9) and its error counters (CapabilityMask2 bit 1,
// IsAdditionalPortCountersExtendedSupported), as asked.
func cpi(extended, errors bool) wire.ClassPortInfo {
	var c wire.ClassPortInfo
	if extended {
		c.CapMask |= 1 << 9
	}
	if errors {
		c.CapMask2 |= 1 << 1
	}
	return c
}

func TestReadCounters_WhatThePMAOffersDecidesTheRead(t *testing.T) {
	errs := wire.PortCounters{SymbolErrorCounter: 7, PortXmitData: 1 << 40, PortRcvData: 1 << 41}
	p := &pma{
		pc:  wire.PortCounters{SymbolErrorCounter: 3, PortXmitData: 4294967295, PortRcvData: 4294967295, PortXmitPkts: 10, PortRcvPkts: 11},
		ext: wire.PortCountersExt{PortXmitData: 1 << 40, PortRcvData: 1 << 41, PortXmitPkts: 1 << 33, PortRcvPkts: 1 << 34, Errors: &errs},
	}

	// Extended with errors: one GMP, every counter 64-bit.
	c, err := ReadCounters(context.Background(), p, wire.Local{}, cpi(true, true), 5, 3, time.Second)
	if err != nil || !c.Wide || !c.HasExt || c.SymbolErrorCounter != 7 || p.askedPC != 0 || p.askedExt != 1 || !p.withErrors {
		t.Fatalf("extended with errors: %+v %v (PortCounters asked %d, extended %d)", c, err, p.askedPC, p.askedExt)
	}

	// Extended without errors: PortCounters' errors, the 64-bit data
	// counters spliced in.
	*p = pma{pc: p.pc, ext: p.ext}
	c, err = ReadCounters(context.Background(), p, wire.Local{}, cpi(true, false), 5, 3, time.Second)
	if err != nil || c.Wide || !c.HasExt || p.withErrors || p.askedPC != 1 {
		t.Fatalf("extended without errors: %+v %v", c, err)
	}
	if c.SymbolErrorCounter != 3 || c.PortXmitData != 1<<40 || c.PortRcvData != 1<<41 || c.PortXmitPkts != 1<<33 || c.PortRcvPkts != 1<<34 {
		t.Fatalf("the 64-bit data counters are not spliced into PortCounters: %+v", c.PortCounters)
	}

	// No extended counters: PortCounters alone, as read.
	*p = pma{pc: p.pc, ext: p.ext}
	c, err = ReadCounters(context.Background(), p, wire.Local{}, cpi(false, false), 5, 3, time.Second)
	if err != nil || c.Wide || c.HasExt || p.askedExt != 0 || c.PortXmitData != 4294967295 {
		t.Fatalf("PortCounters only: %+v %v", c, err)
	}
}

func TestReadCounters_AFailureNamesTheRequestThatFailed(t *testing.T) {
	lost := &wire.Error{Kind: wire.ErrTimeout, Msg: "no answer from the PMA"}
	for _, tc := range []struct {
		name     string
		p        *pma
		offer    wire.ClassPortInfo
		extended bool
	}{
		{"extended", &pma{errExt: lost}, cpi(true, true), true},
		{"PortCounters after the extended", &pma{errPC: lost}, cpi(true, false), false},
		{"PortCounters alone", &pma{errPC: lost}, cpi(false, false), false},
	} {
		_, err := ReadCounters(context.Background(), tc.p, wire.Local{}, tc.offer, 5, 3, time.Second)
		var ce *CounterError
		if !errors.As(err, &ce) || ce.Extended != tc.extended {
			t.Errorf("%s: %v, want a CounterError with Extended %v", tc.name, err, tc.extended)
		}
		var we *wire.Error
		if !errors.As(err, &we) || err.Error() != lost.Error() {
			t.Errorf("%s: %v does not carry the helper's error", tc.name, err)
		}
	}
}

func TestUmadMissing_NamesTheModuleAndItsBootUnit(t *testing.T) {
	dir := t.TempDir()
	why := UmadMissing(dir)
	for _, want := range []string{dir + "/umad*", "modprobe ib_umad", "rdma-load-modules@rdma.service"} {
		if !strings.Contains(why, want) {
			t.Errorf("UmadMissing = %q, want it to name %q", why, want)
		}
	}
	if UmadMissing("") != "" {
		t.Error("no directory configured is not a missing device")
	}
	if err := os.WriteFile(filepath.Join(dir, "umad0"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if why := UmadMissing(dir); why != "" {
		t.Errorf("with umad0 present: %q", why)
	}
	if got := Unavailable(dir, mad.State{Health: mad.Unavailable, Reason: "nichealth-mad not installed"}); got != "nichealth-mad not installed" {
		t.Errorf("Unavailable with an unavailable helper = %q", got)
	}
	if got := Unavailable(dir, mad.State{Health: mad.Running}); got != "" {
		t.Errorf("Unavailable with a running helper = %q", got)
	}
	if got := Unavailable(filepath.Join(dir, "none"), mad.State{Health: mad.Unavailable, Reason: "x"}); !strings.Contains(got, "ib_umad") {
		t.Errorf("a missing umad device goes first: %q", got)
	}
}

type closer struct{ closed atomic.Int32 }

func (c *closer) Close() error { c.closed.Add(1); return nil }

func TestCore_ConfigureWakesPublishesAndCloseEndsTheHelperLast(t *testing.T) {
	type reading struct{ n int }
	helper := &closer{}
	l := New(1, &reading{}, helper, nil)
	core := l.Core()
	if core.Latest() == nil {
		t.Fatal("Latest is nil before the first publication")
	}
	seen := make(chan int, 4)
	var endedBeforeClose atomic.Bool
	l.Go(func(ctx context.Context) {
		for {
			select {
			case <-ctx.Done():
				endedBeforeClose.Store(helper.closed.Load() == 0)
				return
			case <-l.Wake():
				n := l.Config()
				l.Publish(&reading{n})
				seen <- n
			}
		}
	})
	core.Configure(2)
	select {
	case n := <-seen:
		if n != 2 || core.Latest().n != 2 {
			t.Fatalf("woken with %d, latest %d; want 2", n, core.Latest().n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Configure did not wake the goroutine")
	}
	core.Close()
	if helper.closed.Load() != 1 || !endedBeforeClose.Load() {
		t.Fatalf("helper closed %d times; goroutine ended before it: %v", helper.closed.Load(), endedBeforeClose.Load())
	}
}
