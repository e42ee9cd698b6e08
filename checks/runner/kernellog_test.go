package runner

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/kernellog"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/persist"
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

// TestBounded_8_KernelLogTotalsTrueAfterARestart: after a restart the
// totals (nichealth_kernel_log_sequence, _records_total) say the position
// the state kept before any record arrives, and the records the kernel
// hands out again (the FIFO stands in for /dev/kmsg given its ring
// again) count as skipped, not read.
func TestBounded_8_KernelLogTotalsTrueAfterARestart(t *testing.T) {
	h, err := sim.Build(simtest.TempDir(t), "minimal")
	if err != nil {
		t.Fatal(err)
	}
	sub, dev, _ := h.KmsgDict("mlx5_0")
	line := kmsg.Record{Level: 3, Subsystem: sub, Device: dev, Message: "mlx5_core 0000:00:00.0: E-Switch: cleanup"}
	burst := make([]kmsg.Record, 20)
	for i := range burst {
		burst[i] = line
		burst[i].Seq = uint64(i + 1)
	}
	judgeAll := func(m *Runner, want uint64) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			m.Cycle(time.Now())
			if m.KernelLogTotals().Judged == want {
				return
			}
		}
		t.Fatalf("judged %d, want %d", m.KernelLogTotals().Judged, want)
	}
	first := simMonitor(t, h, "")
	first.StartKernelLog(time.Now())
	first.Cycle(time.Now())
	if _, err := h.WriteKmsg(burst...); err != nil {
		t.Fatal(err)
	}
	judgeAll(first, 20)
	st := &persist.State{}
	if err := storeMemory(st, first); err != nil {
		t.Fatal(err)
	}
	first.Close()

	again := startRunner(t, simConfig(t, h, ""), st, persist.BootSame, slog.New(slog.DiscardHandler), Seams{})
	again.StartKernelLog(time.Now())
	again.Cycle(time.Now())
	if tot := again.KernelLogTotals(); tot.Sequence != 20 || tot.Records != 0 {
		t.Fatalf("after the restart, before any record: sequence %d records %d, want 20 and 0", tot.Sequence, tot.Records)
	}
	next := line
	next.Seq = 21
	if _, err := h.WriteKmsg(append(burst, next)...); err != nil {
		t.Fatal(err)
	}
	judgeAll(again, 1)
	if tot := again.KernelLogTotals(); tot.Sequence != 21 || tot.Records != 1 {
		t.Fatalf("sequence %d records %d, want 21 and 1 (20 skipped)", tot.Sequence, tot.Records)
	}
}

// TestBounded_5_TheObserverHandsNoMoreThanTheCheckCanJudge: with a work
// budget that judges a few records a cycle, the check carries at most one
// batch, the observer is asked for no more than the room it leaves, and
// the whole burst is judged, none dropped.
func TestBounded_5_TheObserverHandsNoMoreThanTheCheckCanJudge(t *testing.T) {
	h, err := sim.Build(simtest.TempDir(t), "minimal")
	if err != nil {
		t.Fatal(err)
	}
	m := simMonitor(t, h, "")
	m.StartKernelLog(time.Now())
	m.set.kernelLog.SetBudget(2000) // about ten records of the default table
	m.Cycle(time.Now())
	sub, dev, _ := h.KmsgDict("mlx5_0")
	burst := make([]kmsg.Record, 3000)
	for i := range burst {
		burst[i] = kmsg.Record{Level: 3, Subsystem: sub, Device: dev, Message: fmt.Sprintf("mlx5_core 0000:00:00.0: E-Switch: cleanup %d", i)}
	}
	if _, err := h.WriteKmsg(burst...); err != nil {
		t.Fatal(err)
	}
	most := 0
	for deadline := time.Now().Add(60 * time.Second); m.KernelLogTotals().Judged < 3000 && time.Now().Before(deadline); {
		m.Cycle(time.Now())
		w := m.set.kernelLog
		if c := w.Carried(); c > most {
			most = c
		}
		if len(m.last.KernelLog.Records) > 1024 {
			t.Fatalf("handed %d records in one cycle", len(m.last.KernelLog.Records))
		}
	}
	tot := m.KernelLogTotals()
	if tot.Judged != 3000 || tot.OverBudget != 0 || most > 1024 || most == 0 {
		t.Fatalf("judged %d, over budget %d, most carried %d", tot.Judged, tot.OverBudget, most)
	}
}
