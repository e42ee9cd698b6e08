package runner

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/persist"
	"github.com/nichealth/nichealthd/topology/sim"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

// DESIGN.md difference 18: an mlx5_ib reload (the function stays bound to
// mlx5_core without its RDMA device) or a devlink or mlx5_core reload (no
// driver for a moment) that is back within difference 3's three complete
// enumerations says nothing at all: not the inventory's function failure,
// not the port check's disappearance.
func TestDesign_18_ReloadWithinTheEnumerationsIsSilent(t *testing.T) {
	for _, mode := range []string{sim.DetachNoRDMA, sim.DetachUnbound} {
		for missed := 1; missed <= 2; missed++ {
			t.Run(fmt.Sprintf("%s for %d enumerations", mode, missed), func(t *testing.T) {
				h := simtest.Build(t, "dgx-h100")
				m := simMonitor(t, h, "")
				now := time.Unix(1_700_000_000, 0)
				m.Cycle(now)
				if err := h.DetachFunction("mlx5_3", mode); err != nil {
					t.Fatal(err)
				}
				for i := 0; i < missed; i++ {
					now = now.Add(time.Second)
					if specs, _ := m.Cycle(now); len(specs) != 0 {
						t.Fatalf("enumeration %d without mlx5_3: %+v", i+1, specs)
					}
				}
				if err := h.RestoreDevice("mlx5_3"); err != nil {
					t.Fatal(err)
				}
				// Back, and then as many polls as it takes to be sure.
				for i := 0; i < 4; i++ {
					now = now.Add(time.Second)
					if specs, _ := m.Cycle(now); len(specs) != 0 {
						t.Fatalf("poll %d after the reload: %+v", i+1, specs)
					}
				}
			})
		}
	}
}

// DESIGN.md difference 18: a real loss, the function left on the bus
// without its RDMA device, is exactly one fatal condition after three
// complete enumerations: the inventory's, naming the fix, the NIC's ports
// (so its MISSING ports are fatal in every view) and the GPUs behind it.
// The port check does not report the NIC disappeared besides, card
// homogeneity does not report its card, and a restart in the same boot
// keeps it one condition.
func TestDesign_18_RealLossIsOneFatalCondition(t *testing.T) {
	// A compute NIC alone on its card, and a storage RoCE function whose
	// card keeps its other function (card homogeneity sees that card one
	// port short of its peer).
	for _, tc := range []struct {
		dev, gpus, check string
	}{{"mlx5_5", "GPU5", event.InfiniBandStateCheck}, {"mlx5_9", "", event.EthernetStateCheck}} {
		t.Run(tc.dev, func(t *testing.T) { realLoss(t, tc.dev, tc.gpus, tc.check) })
	}
}

func realLoss(t *testing.T, dev, gpus, check string) {
	h := simtest.Build(t, "dgx-h100")
	// A short hold: a card anomaly would have had its chance.
	m := simMonitor(t, h, "cardAnomalyHold = \"1s\"\n")
	model := health.NewModel()
	now := time.Unix(1_700_000_000, 0)
	fold := func(specs []event.Spec) {
		for _, s := range specs {
			e := event.New(m.Annotate(s), event.Stamp{NodeName: "t", Now: now})
			model.Apply(&e)
		}
	}
	specs, _ := m.Cycle(now)
	fold(specs)
	if err := h.DetachFunction(dev, sim.DetachNoRDMA); err != nil {
		t.Fatal(err)
	}
	var raised []event.Spec
	// 35 polls 1 s apart: past the default 30 s hold of a run-time loss
	// (difference 18), with the card anomaly's and the enumerations'
	// chances long gone.
	for i := 0; i < 35; i++ {
		now = now.Add(time.Second)
		specs, _ := m.Cycle(now)
		fold(specs)
		for _, s := range specs {
			if s.IsFatal {
				raised = append(raised, s)
			}
		}
	}
	if len(raised) != 1 || raised[0].Kind != event.KindFunctionFailed {
		t.Fatalf("fatal events for one loss: %+v", raised)
	}
	e := event.New(m.Annotate(raised[0]), event.Stamp{NodeName: "t", Now: now})
	wantGPUs := "no GPU affinity"
	if gpus != "" {
		wantGPUs = gpuDesc(t, h, int(gpus[3]-'0'))
	}
	if e.Metadata["gpus"] != wantGPUs || e.Metadata["lastDevice"] != dev || e.Device() != dev || e.Port() != "1" || e.CheckName != check ||
		!strings.Contains(e.Message, "modprobe mlx5_ib") || !strings.Contains(e.Message, "one condition") {
		t.Fatalf("event %+v", e)
	}
	snap := health.Build(health.Node{}, m.PortInfos(), model.Conditions())
	p := snap.Port(dev, 1)
	if p == nil || !p.Missing || p.Verdict != health.Fatal || p.Role == "" || p.GPUs != wantGPUs || len(p.Conditions) != 1 {
		t.Fatalf("the missing port in the snapshot: %+v", p)
	}
	if n := len(model.Conditions()); n != 1 {
		t.Fatalf("%d conditions for one loss: %+v", n, model.Conditions())
	}

	// A restart in the same boot: still one condition, nothing said again.
	st := persist.NewState("boot")
	if err := storeMemory(st, m); err != nil {
		t.Fatal(err)
	}
	m2 := startRunner(t, simConfig(t, h, "cardAnomalyHold = \"1s\"\n"), st, persist.BootSame, slog.New(slog.NewTextHandler(io.Discard, nil)), Seams{})
	for i := 0; i < 5; i++ {
		now = now.Add(time.Second)
		if specs, _ := m2.Cycle(now); len(specs) != 0 {
			t.Fatalf("poll %d after the restart: %+v", i+1, specs)
		}
	}
	// Back: the one condition clears, and nothing reappears that was
	// never said.
	if err := h.RestoreDevice(dev); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	specs, _ = m2.Cycle(now)
	if len(specs) != 1 || specs[0].Kind != event.KindFunctionOK || fmt.Sprint(specs[0].Ports) != fmt.Sprintf("[{%s 1}]", dev) {
		t.Fatalf("back: %+v", specs)
	}
}

// A NIC gone from the bus at run time stays the port check's one
// disappearance (the inventory leaves it alone), and its event names the
// GPUs behind it although discovery no longer lists it.
func TestDesign_18_NICGoneFromTheBusIsThePortChecksOneCondition(t *testing.T) {
	h := simtest.Build(t, "dgx-h100")
	m := simMonitor(t, h, "")
	now := time.Unix(1_700_000_000, 0)
	m.Cycle(now)
	if err := h.RemoveDevice("mlx5_6"); err != nil {
		t.Fatal(err)
	}
	var fatal []event.Spec
	for i := 0; i < 5; i++ {
		now = now.Add(time.Second)
		specs, _ := m.Cycle(now)
		for _, s := range specs {
			if s.IsFatal {
				fatal = append(fatal, s)
			}
		}
	}
	if len(fatal) != 1 || fatal[0].Kind != event.KindDeviceDisappeared {
		t.Fatalf("fatal events: %+v", fatal)
	}
	if g := m.Annotate(fatal[0]).Metadata["gpus"]; g != gpuDesc(t, h, 6) {
		t.Fatalf("disappearance names GPUs %q, want %q", g, gpuDesc(t, h, 6))
	}
}

// gpuDesc is how events and views name GPU id of h: "GPU6 (<pci> <uuid>)".
func gpuDesc(t *testing.T, h *sim.Host, id int) string {
	t.Helper()
	for _, g := range h.GPUs() {
		if g.ID == id {
			return fmt.Sprintf("GPU%d (%s %s)", id, g.PCIAddress, g.UUID)
		}
	}
	t.Fatalf("no GPU%d", id)
	return ""
}

// DESIGN.md difference 20 on every real shape the simulator builds (the
// scale shapes xl and xxl are benchmarks, not products): the first poll
// of a healthy node raises no drift finding, nor anything else. The
// DGX H100 carries two PSIDs (its dual-port cards, MT_0000000834, beside
// the compute cards, MT_0000000838), in one role when the dual-port cards
// run InfiniBand (dgx-h100-ib).
func TestDesign_20_FirstPollOfEveryRealShapeHasNoFinding(t *testing.T) {
	for _, shape := range sim.Shapes() {
		if desc, _ := sim.Describe(shape); strings.HasPrefix(desc, "scale:") {
			continue
		}
		t.Run(shape, func(t *testing.T) {
			h := simtest.Build(t, shape)
			m := simMonitor(t, h, "")
			specs, _ := m.Cycle(time.Unix(1_700_000_000, 0))
			for _, s := range specs {
				if !s.IsHealthy {
					t.Errorf("first poll: %s %s: %s", s.Kind, s.CheckName, s.Message)
				}
			}
			psids := map[string]bool{}
			for _, d := range m.Devices() {
				if d.Monitored() {
					psids[d.BoardID] = true
				}
			}
			if strings.HasPrefix(shape, "dgx-h100") && (!psids["MT_0000000834"] || !psids["MT_0000000838"]) {
				t.Fatalf("%s monitors PSIDs %v, want MT_0000000834 and MT_0000000838", shape, psids)
			}
		})
	}
}
