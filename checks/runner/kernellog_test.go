package runner

import (
	"fmt"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/kernellog"
	"github.com/nichealth/nichealthd/event"
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
	m.StartKernelLog(time.Now())
	m.Cycle(time.Now())
	d := m.set.kernelLog.Devices(m.last)
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
	if m.set.kernelLog.Devices(m.last) != d {
		t.Error("the map is rebuilt without a new plan")
	}
	m.Reconfigure(m.cfg, time.Now()) // the plan is built again
	m.Cycle(time.Now())
	if m.set.kernelLog.Devices(m.last) == d {
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
		out, _ := m.Cycle(time.Now())
		for _, s := range out {
			if s.Kind == event.KindKernelLog {
				specs = append(specs, s)
			}
		}
	}
	if mem := m.set.kernelLog.Memory(); len(specs) != 1 || !specs[0].IsFatal || fmt.Sprint(specs[0].Ports) != "[{mlx5_0 1}]" || !mem.HasSeq {
		t.Fatalf("specs %+v cursor %+v", specs, mem)
	}
	if tot := m.KernelLogTotals(); tot.Judged != 1 || len(tot.Matches) != 1 || tot.Matches[0].Device != "mlx5_0" {
		t.Fatalf("totals %+v", tot)
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
			mem := m.set.kernelLog.Memory()
			for _, p := range []string{"cmd_exec_timeout", "tx_timeout"} {
				mem.Active[kernellog.Key(p, "0000:19:00.0")] = &kernellog.Active{Pattern: p, PCI: "0000:19:00.0", Device: "mlx5_0",
					Ports: []kernellog.Port{{Device: "mlx5_0", Port: 1}}, Raised: true, Count: 1}
			}
			m.StartKernelLog(time.Now())
			var got []string
			for _, s := range m.pending {
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
