package observe

import (
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/ethtool"
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
