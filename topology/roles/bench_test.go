package roles

import (
	"path/filepath"
	"testing"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/gpumeta"
	"github.com/nichealth/nichealthd/topology/sim"
)

// BenchmarkClassify_DGXH100 is the start-up cost of the whole role chain
// on a DGX H100: matrix from sysfs, default route, classification.
func BenchmarkClassify_DGXH100(b *testing.B) {
	h, err := sim.Build(filepath.Join(b.TempDir(), "h"), "dgx-h100")
	if err != nil {
		b.Fatal(err)
	}
	devs, _, err := topology.Discover(h.Paths(), topology.Filter{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		m, err := gpumeta.FromSysfs(h.Paths(), devs)
		if err != nil {
			b.Fatal(err)
		}
		routes, err := DefaultRouteDevices(h.Paths())
		if err != nil {
			b.Fatal(err)
		}
		if err := Classify(devs, m, routes); err != nil {
			b.Fatal(err)
		}
	}
}
