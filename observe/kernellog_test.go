package observe

import (
	"io"
	"log/slog"
	"testing"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sim"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

// A quiet kernel log costs the poll loop three short critical sections
// and no allocation.
func BenchmarkKernelLogCycle_Quiet(b *testing.B) {
	h, err := sim.Build(simtest.TempDir(b), "dgx-h100")
	if err != nil {
		b.Fatal(err)
	}
	paths := topology.Paths{SysfsRoot: h.SysRoot(), ProcfsRoot: h.ProcRoot(), DevRoot: h.DevRoot()}.WithDefaults()
	o := New(Config{Paths: paths}, BootFresh, slog.New(slog.NewTextHandler(io.Discard, nil)), Seams{}, nil)
	defer o.Close()
	o.OpenKernelLog(false, 0)
	b.ReportAllocs()
	for b.Loop() {
		o.kernelLogStep()
	}
}
