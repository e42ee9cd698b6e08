package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/checks/kernellog"
	"github.com/nichealth/nichealthd/topology/kmsg"
	"github.com/nichealth/nichealthd/topology/sim"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

// The functions a record is attributed with come from discovery: the
// monitored ones with their ports, every function discovery saw (VFs
// and the management NIC included) with its netdev and RDMA names.
func TestKernelLog_11_FunctionMapFromDiscovery(t *testing.T) {
	h, err := sim.Build(simtest.TempDir(t), "dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	m := simMonitor(t, h, "")
	m.startKernelLog("boot")
	d := m.kernelLogDevices()
	if f := d.Monitored["0000:19:00.0"]; f.Device != "mlx5_0" || fmt.Sprint(f.Ports) != "[{mlx5_0 1}]" {
		t.Errorf("mlx5_0: %+v", f)
	}
	for _, pci := range []string{"0000:19:00.1", "0000:0d:00.0"} { // a VF, the management NIC
		if _, mon := d.Monitored[pci]; mon || !d.Known[pci] {
			t.Errorf("%s: monitored %v known %v", pci, mon, d.Known[pci])
		}
	}
	if d.Names["ibp25s0"] != "0000:19:00.0" || d.Names["mlx5_12"] != "0000:0d:00.0" || d.Names["enp65s0f0np0"] != "0000:41:00.0" {
		t.Errorf("names %v", d.Names)
	}
	if m.kernelLogDevices() != d {
		t.Error("the map is rebuilt without a new plan")
	}
	m.buildPlan()
	if m.kernelLogDevices() == d {
		t.Error("the map outlived its plan")
	}

	// A cycle judges what the reader queued.
	sub, dev, _ := h.KmsgDict("mlx5_0")
	if _, err := h.WriteKmsg(kmsg.Record{Level: 3, Subsystem: sub, Device: dev,
		Message: "mlx5_core 0000:19:00.0: wait_func:1189:(pid 1): ENABLE_HCA(0x104) timeout. Will cause a leak of a command resource"}); err != nil {
		t.Fatal(err)
	}
	var specs []event.Spec
	for deadline := time.Now().Add(20 * time.Second); len(specs) == 0 && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for _, s := range first2(m.Cycle(time.Now())) {
			if s.Kind == event.KindKernelLog {
				specs = append(specs, s)
			}
		}
	}
	if len(specs) != 1 || !specs[0].IsFatal || fmt.Sprint(specs[0].Ports) != "[{mlx5_0 1}]" || !m.mem.KernelLog.HasSeq {
		t.Fatalf("specs %+v cursor %+v", specs, m.mem.KernelLog)
	}
	if tot := m.kernelLogTotals(); tot.Judged != 1 || len(tot.Matches) != 1 || tot.Matches[0].Device != "mlx5_0" {
		t.Fatalf("totals %+v", tot)
	}
}

func first2(s []event.Spec, _ bool) []event.Spec { return s }

// A quiet kernel log costs the poll loop three short critical sections
// and no allocation.
func BenchmarkKernelLogCycle_Quiet(b *testing.B) {
	h, err := sim.Build(simtest.TempDir(b), "dgx-h100")
	if err != nil {
		b.Fatal(err)
	}
	m := simMonitor(b, h, "")
	m.startKernelLog("boot")
	var specs []event.Spec
	changed := false
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now = now.Add(100 * time.Millisecond)
		m.kernelLogCycle(now, &specs, &changed)
	}
}

// Conditions remembered from before a start are settled at the start: a
// pattern removed while the daemon was down clears its condition, and a
// check switched off clears them all.
func TestKernelLog_11_StartSettlesRememberedConditions(t *testing.T) {
	h, err := sim.Build(simtest.TempDir(t), "minimal")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, extra string
		want        []string
	}{
		{"pattern disabled while down", "[[kernelLog.patterns]]\nname = \"tx_timeout\"\nenabled = false\n", []string{"tx_timeout"}},
		{"check switched off while down", "[kernelLog]\nenabled = false\n", []string{"cmd_exec_timeout", "tx_timeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := simMonitor(t, h, tc.extra)
			mem := m.mem.KernelLog
			for _, p := range []string{"cmd_exec_timeout", "tx_timeout"} {
				mem.Active[kernellog.Key(p, "0000:19:00.0")] = &kernellog.Active{Pattern: p, PCI: "0000:19:00.0", Device: "mlx5_0",
					Ports: []kernellog.Port{{Device: "mlx5_0", Port: 1}}, Raised: true, Count: 1}
			}
			m.startKernelLog("boot")
			var got []string
			for _, s := range m.pendingSpecs {
				if s.Kind == event.KindKernelLogCleared {
					got = append(got, s.Metadata["pattern"])
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("cleared %v, want %v", got, tc.want)
			}
		})
	}
}
