package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology/sim"
)

// DESIGN.md section 15 through the runner: the port's events carry its
// cable verdict (cableDirection, cableSuspect, cableEvidence), a clean
// port's carry none, the snapshot's port shows the same verdict, and the
// port's link-up event measures the episode against the [cable] budget,
// reloaded.
func TestCable_15_RunnerAnnotatesThePortsEvents(t *testing.T) {
	h, err := sim.Build(t.TempDir(), "dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	m := simMonitor(t, h, "pollingInterval = \"1s\"\n[cable]\ntransportTimeout = 14\ntransportRetries = 0\n")
	t0 := time.Unix(1_700_000_000, 0)
	m.Cycle(t0)
	if err := h.AddCounter("mlx5_0", 1, "counters/symbol_error", 50); err != nil {
		t.Fatal(err)
	}
	specs, _ := m.Cycle(t0.Add(time.Second))
	b := breachesOf(specs, "symbol_error")
	if len(b) != 1 {
		t.Fatalf("breaches %+v", b)
	}
	md := m.Annotate(b[0]).Metadata
	if md["cableDirection"] != "to-host" || md["cableSuspect"] != "unknown" ||
		md["cableEvidence"] != "host symbol_error +50 in 2m0s; switch port not read (the far end is off: [farEnd] enabled = false)" {
		t.Fatalf("breach metadata %v", md)
	}
	if b[0].Metadata["cableDirection"] != "" {
		t.Fatal("Annotate modified the check's own metadata map")
	}
	var pi *struct{ d, s string }
	for _, p := range m.PortInfos() {
		if p.Device == "mlx5_0" {
			pi = &struct{ d, s string }{p.Cable.Direction, p.Cable.Suspect}
		}
		if p.Device == "mlx5_1" && (p.Cable.Direction != "none" || p.Cable.Suspect != "") {
			t.Fatalf("a clean port's verdict %+v", p.Cable)
		}
	}
	if pi == nil || pi.d != "to-host" || pi.s != "unknown" {
		t.Fatalf("snapshot verdict %+v", pi)
	}

	// Down and up again; [cable] 14/0 is a 67 ms budget, then reloaded to
	// NCCL's 20/7.
	if err := h.SetPortState("mlx5_1", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	specs, _ = m.Cycle(t0.Add(2 * time.Second))
	for _, s := range specs {
		if s.Device == "mlx5_1" {
			if _, ok := m.Annotate(s).Metadata["cableDirection"]; ok {
				t.Fatalf("a clean port's event carries a verdict: %v", s)
			}
		}
	}
	if err := h.SetPortState("mlx5_1", 1, "ACTIVE", "LinkUp"); err != nil {
		t.Fatal(err)
	}
	up := recoveredOf(t, m, t0.Add(3*time.Second+500*time.Millisecond), "mlx5_1")
	if !strings.HasSuffix(up.Message, "; down 1.5 s: longer than the 67.1 ms RDMA retry budget") || up.Metadata["downFor"] != "1.500s" || up.Metadata["retryBudget"] != "0.067s" {
		t.Fatalf("link-up event %q %v", up.Message, up.Metadata)
	}
	cfg := simConfig(t, h, "pollingInterval = \"1s\"\n")
	m.Reconfigure(cfg, t0.Add(4*time.Second))
	if err := h.SetPortState("mlx5_1", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	m.Cycle(t0.Add(5 * time.Second))
	if err := h.SetPortState("mlx5_1", 1, "ACTIVE", "LinkUp"); err != nil {
		t.Fatal(err)
	}
	up = recoveredOf(t, m, t0.Add(6*time.Second), "mlx5_1")
	if !strings.HasSuffix(up.Message, "; down 1.0 s: within the 34 s RDMA retry budget") || up.Metadata["retryBudget"] != "34.360s" {
		t.Fatalf("after the reload: %q %v", up.Message, up.Metadata)
	}
}

// recoveredOf runs a cycle at now and returns dev's link-up event,
// annotated as the daemon commits it.
func recoveredOf(t *testing.T, m *Runner, now time.Time, dev string) event.Spec {
	t.Helper()
	specs, _ := m.Cycle(now)
	for _, s := range specs {
		if s.Device == dev && s.Kind == event.KindPortRecovered {
			return m.Annotate(s)
		}
	}
	t.Fatalf("no link-up event of %s in %+v", dev, specs)
	return event.Spec{}
}
