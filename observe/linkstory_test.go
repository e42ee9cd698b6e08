package observe

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/ethtool"
	"github.com/nichealth/nichealthd/topology/module"
	"github.com/nichealth/nichealthd/topology/sim"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

// countingLinks answers "no cable" and counts the questions.
type countingLinks struct {
	mu    sync.Mutex
	asked map[string]int
}

func (c *countingLinks) LinkState(netdev string) (ethtool.LinkState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked[netdev]++
	return ethtool.LinkState{HasLink: true, HasExt: true, Ext: ethtool.ExtNoCable}, nil
}

func (c *countingLinks) n(netdev string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asked[netdev]
}

func newSimObserver(t *testing.T, seams Seams) (*Observer, *sim.Host) {
	t.Helper()
	h, err := sim.Build(simtest.TempDir(t), "dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	paths := topology.Paths{SysfsRoot: h.SysRoot(), ProcfsRoot: h.ProcRoot(), DevRoot: h.DevRoot()}.WithDefaults()
	o := New(Config{Paths: paths, PollInterval: time.Millisecond, ReadTimeout: time.Second, MaxStuckReads: 4, TopologySource: "auto",
		MetadataPath: h.MetadataPath()}, BootFresh, slog.New(slog.NewTextHandler(io.Discard, nil)), seams, nil)
	t.Cleanup(o.Close)
	if err := o.Discover(); err != nil {
		t.Fatal(err)
	}
	return o, h
}

func portOf(o *Observer, dev string) *Port {
	for _, p := range o.Ports() {
		if p.Device.Name == dev && p.Port.Num == 1 {
			return p
		}
	}
	return nil
}

// DESIGN.md section 7: the link-down reason is asked once, when a RoCE
// port leaves ACTIVE; steady polls ask nothing, an IB port is never asked,
// and the reason goes with the port's recovery.
func TestDesign_7_LinkDownAskedOnlyWhenAPortLeavesActive(t *testing.T) {
	links := &countingLinks{asked: map[string]int{}}
	o, h := newSimObserver(t, Seams{LinkStates: links})
	const dev, netdev = "mlx5_8", "enp65s0f0np0"
	now := time.Now()
	cycle := func() {
		now = now.Add(time.Second) // every cycle a state poll
		o.Cycle(now)
		o.Settle(now, false)
	}
	for range 3 {
		cycle()
	}
	if len(links.asked) != 0 {
		t.Fatalf("asked %v while every port is up", links.asked)
	}
	if err := h.SetPortState(dev, 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	if err := h.SetPortState("mlx5_0", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		cycle()
	}
	p := portOf(o, dev)
	if p == nil || p.LinkDown.Reason != "no_cable" || p.LinkDown.Words != "no cable" {
		t.Fatalf("port %+v", p)
	}
	if links.n(netdev) != 1 || len(links.asked) != 1 {
		t.Fatalf("asked %v; want %s once", links.asked, netdev)
	}
	if err := h.SetPortState(dev, 1, "ACTIVE", "LinkUp"); err != nil {
		t.Fatal(err)
	}
	cycle()
	if p := portOf(o, dev); p.LinkDown != (LinkDown{}) || links.n(netdev) != 1 {
		t.Errorf("after recovery: %+v, asked %d times", p.LinkDown, links.n(netdev))
	}
}

// The pass runs on its own goroutine and hands the next cycle what it
// read: the RoCE ports' modules (one installed, the others' cages empty)
// and devlink.
func TestDesign_7_StoryPassHandsOnItsReadings(t *testing.T) {
	o, h := newSimObserver(t, Seams{})
	o.seams = Seams{Modules: sim.Modules{Root: h.Root}, Devlink: sim.Devlink{Root: h.Root}}
	if err := h.InstallModule("enp65s0f0np0"); err != nil {
		t.Fatal(err)
	}
	if err := h.DevlinkReport("mlx5_0", "fw_fatal", false); err != nil {
		t.Fatal(err)
	}
	o.OpenLinkStory()
	deadline := time.Now().Add(time.Minute)
	for {
		now := time.Now()
		obs := o.Cycle(now)
		o.Settle(now, false)
		if ls := obs.LinkStory; ls.New {
			var read, empty int
			for _, m := range ls.Modules {
				switch {
				case m.Err == nil && m.Module.Type == "OSFP":
					read++
				case errors.Is(m.Err, unix.EOPNOTSUPP):
					empty++
				}
			}
			if read != 1 || empty != len(ls.Modules)-1 || len(ls.Modules) != 4 || len(ls.Reporters) != 3 || !ls.Reporters[1].Error {
				t.Fatalf("pass: %d read, %d empty of %d modules; reporters %+v", read, empty, len(ls.Modules), ls.Reporters)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no pass handed on within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// countingModules answers like an empty cage (mlx5: EIO, which the
// ethtool reader reports as module.ErrNoModule) and counts the reads.
type countingModules struct {
	mu    sync.Mutex
	reads map[string]int
}

func (c *countingModules) Module(netdev string) (module.Memory, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads[netdev]++
	return module.Memory{}, fmt.Errorf("ethtool netlink %s: module page 00h offset 0: %w: %w", netdev, module.ErrNoModule, unix.EIO)
}

// Issue 40 row 10: an empty cage is read once, not once a minute and on
// every port-down: over ten minutes of simulated time (the pass's loop on
// a simulated minute ticker, and passes asked for by other ports going
// down) its reads stay at 1;
// a change of its port's state or link-down reason reads it again, and
// its "no module" answer stands in every pass between.
func TestIssue40_Row10_EmptyCageReadOnce(t *testing.T) {
	mods := &countingModules{reads: map[string]int{}}
	s := newStoryReader(mods, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	clock := time.Date(2026, 12, 3, 6, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return clock }
	down := storyTarget{device: "mlx5_1", port: 1, netdev: "enp65s0f1np1", state: "DOWN Disabled|down|no_cable|"}
	s.setTargets([]storyTarget{down})
	ticks := make(chan time.Time)
	s.ticker = func(d time.Duration) (<-chan time.Time, func()) {
		if d != time.Minute {
			t.Errorf("the pass runs every %v, want a minute", d)
		}
		return ticks, func() {}
	}
	var gen uint64
	waitPass := func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			r, g, ok, _ := s.take(gen, clock)
			if ok {
				gen = g
				if len(r.Modules) != 1 || !errors.Is(r.Modules[0].Err, module.ErrNoModule) {
					t.Fatalf("pass %d: %+v", g, r)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("no pass")
			}
			time.Sleep(time.Millisecond)
		}
	}
	go s.loop()
	waitPass() // the first pass, at once
	for minute := 1; minute <= 10; minute++ {
		clock = clock.Add(time.Minute)
		ticks <- clock // the minute's pass
		waitPass()
		if minute%3 == 0 {
			s.ask() // another port went down: a pass now
			waitPass()
		}
	}
	close(s.stop)
	<-s.done
	mods.mu.Lock()
	defer mods.mu.Unlock()
	if n := mods.reads[down.netdev]; n != 1 {
		t.Fatalf("empty cage read %d times in ten minutes, want 1", n)
	}
	// A module plugged in: the link-down reason changes, the cage is read.
	down.state = "DOWN Polling|down|autoneg_failure|"
	s.setTargets([]storyTarget{down})
	mods.mu.Unlock()
	s.pass()
	s.pass()
	mods.mu.Lock()
	if n := mods.reads[down.netdev]; n != 2 {
		t.Errorf("after the reason changed: %d reads, want 2", n)
	}
	// An up port always has a module: its cage is read every pass.
	down.up, down.state = true, "ACTIVE LinkUp|up||"
	s.setTargets([]storyTarget{down})
	mods.mu.Unlock()
	s.pass()
	s.pass()
	mods.mu.Lock()
	if n := mods.reads[down.netdev]; n != 4 {
		t.Errorf("an up port's cage: %d reads, want 4", n)
	}
}
