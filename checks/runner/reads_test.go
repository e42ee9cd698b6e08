package runner

import (
	"os"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology/sim"
)

// A read that hangs is reported once (read-stuck), the file is skipped
// while it hangs, and the first read that returns clears it
// (read-recovered) on the same check, device, port and file: the promise
// the black-box tests check over a minute, here in a few simulated cycles.
func TestReads_HungReadReportedOnceAndRecovered(t *testing.T) {
	h, err := sim.Build(t.TempDir(), "dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	m := simMonitor(t, h, "readTimeout = \"50ms\"\n")
	now := time.Unix(1_800_000_000, 0)
	m.Cycle(now)
	const rel = "counters/port_rcv_errors"
	fifo, err := h.PortPath("mlx5_1", 1, rel)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.MakeFIFO("mlx5_1", 1, rel); err != nil {
		t.Fatal(err)
	}
	count := func(specs []event.Spec, k event.Kind) (n int, last event.Spec) {
		for _, s := range specs {
			if s.Kind == k && s.Metadata["file"] == fifo {
				n, last = n+1, s
			}
		}
		return n, last
	}
	stuck := 0
	var raised event.Spec
	for i := 1; i <= 3; i++ {
		specs, _ := m.Cycle(now.Add(time.Duration(i) * time.Second))
		n, s := count(specs, event.KindReadStuck)
		if n > 0 {
			raised = s
		}
		stuck += n
	}
	if stuck != 1 || raised.Device != "mlx5_1" || raised.Port != 1 {
		t.Fatalf("%d read-stuck events over three cycles of a hung file, want exactly one on mlx5_1/1: %+v", stuck, raised)
	}
	// Release the hang: a writer gives the blocked read its value.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.UnmakeFIFO("mlx5_1", 1, rel); err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("0\n"))
	w.Close()
	recovered := 0
	var cleared event.Spec
	// The blocked read returns on the reader's worker in real time: give
	// it up to a few seconds of it, however loaded the machine.
	for i := 4; i <= 400 && recovered == 0; i++ {
		if i > 8 {
			time.Sleep(10 * time.Millisecond)
		}
		specs, _ := m.Cycle(now.Add(time.Duration(i) * time.Second))
		recovered, cleared = count(specs, event.KindReadRecovered)
	}
	if recovered != 1 || !cleared.IsHealthy || cleared.CheckName != raised.CheckName || cleared.Device != "mlx5_1" || cleared.Port != 1 {
		t.Fatalf("read-recovered %d times: %+v (raised %+v)", recovered, cleared, raised)
	}
}
