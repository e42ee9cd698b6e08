package roce

import (
	"slices"
	"testing"

	"github.com/nichealth/nichealthd/checks/latch"
)

// A RoCE NIC renamed under the same PCI address keeps its window and its
// classes (each still gets its clear), and its old name keeps nothing.
func TestDesign16_RenameMovesThePortsWindowAndClasses(t *testing.T) {
	c := NewCheck()
	c.mem.Ports[latch.PortOf("mlx5_4", 1)] = &PortMemory{Classes: latch.Set[string, Raised]{Congested: {}}}
	c.mem.Ports[latch.PortOf("mlx5_5", 1)] = &PortMemory{}
	c.Rename("mlx5_4", "rocep12s0")
	want := []latch.Port{latch.PortOf("mlx5_5", 1), latch.PortOf("rocep12s0", 1)}
	if got := c.mem.Ports.Keys(); !slices.Equal(got, want) || !c.mem.Ports[want[1]].Classes.Has(Congested) {
		t.Fatalf("after the rename: %v, want %v with %s", got, want, Congested)
	}
}
