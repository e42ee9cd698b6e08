package main

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/nichealth/nichealthd/event"
)

func (v *viewNode) sim(args ...string) string {
	v.t.Helper()
	out, err := exec.Command(simBinary(v.t), append(args, "--root", v.h.Root)...).CombinedOutput()
	if err != nil {
		v.t.Fatalf("nichealth-sim %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestAER_BlackBox_FatalOnSwitchPortShowsOnBothNICs: on the OCI H100
// shape a dual-function card (mlx5_0, mlx5_1) sits below one switch
// downstream port. A fatal AER error on that port is one event naming the
// PCI function and both NICs; both ports are CRITICAL in every view and
// /metrics counts it; resetting the counters clears it everywhere.
func TestAER_BlackBox_FatalOnSwitchPortShowsOnBothNICs(t *testing.T) {
	t.Parallel()
	v := newShapeViewNode(t, "h100-oci")
	v.start()
	v.waitReady()
	v.agree(verdictWant{"mlx5_0", 1, "healthy"})
	skip := v.mark()
	sw := v.sim("aer", "add", "above:mlx5_0", "fatal", "MalfTLP", "1")
	isAER := func(kind event.Kind) func(e event.Event) bool {
		return func(e event.Event) bool { return e.Kind == kind && e.Metadata["pci"] == sw }
	}
	e := v.waitEventAfter(skip, "AER fatal on "+sw, isAER(event.KindPCIeAER))
	wantEnts := []event.Entity{{Type: "NIC", Value: "mlx5_0"}, {Type: "NICPort", Value: "1"}, {Type: "NIC", Value: "mlx5_1"}, {Type: "NICPort", Value: "1"}}
	if !e.IsFatal || e.Metadata["aer"] != "fatal" || fmt.Sprint(e.EntitiesImpacted) != fmt.Sprint(wantEnts) ||
		!strings.Contains(e.Message, "PCIe AER on "+sw+" (switch port above mlx5_0, mlx5_1): uncorrectable fatal errors MalfTLP +1") ||
		e.RecommendedAction != event.ActionReplaceVM {
		t.Fatalf("event %+v", e)
	}
	v.agree(verdictWant{"mlx5_0", 1, "fatal"})
	v.agree(verdictWant{"mlx5_1", 1, "fatal"})
	metric := fmt.Sprintf(`nichealth_pcie_aer_errors_total{pci="%s",severity="fatal"} 1`, sw)
	if page := v.scrape(); !strings.Contains(page, metric) {
		t.Fatalf("/metrics lacks %s", metric)
	}
	skip = len(v.read())
	v.sim("aer", "reset", sw)
	if c := v.waitEventAfter(skip, "AER cleared", isAER(event.KindPCIeAERRecovered)); !c.IsHealthy || len(c.EntitiesImpacted) != 4 {
		t.Fatalf("clear %+v", c)
	}
	v.agree(verdictWant{"mlx5_0", 1, "healthy"})
	v.agree(verdictWant{"mlx5_1", 1, "healthy"})
	v.cmd.Process.Signal(syscall.SIGTERM)
	v.cmd.Wait()
}
