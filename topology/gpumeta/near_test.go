package gpumeta

import (
	"slices"
	"testing"
)

func TestNear_PIXAndPXBOnly(t *testing.T) {
	m := &Matrix{
		GPUs: []GPU{{ID: 0, PCIAddress: "0000:1b:00.0"}, {ID: 1, PCIAddress: "0000:43:00.0"}, {ID: 2}, {ID: 3}},
		NICs: map[string][]string{"mlx5_0": {"PIX", "PXB", "NODE", "SYS"}, "mlx5_9": {"SYS", "SYS", "NODE", "PHB"}},
	}
	var ids []int
	for _, g := range m.Near("mlx5_0") {
		ids = append(ids, g.ID)
	}
	if !slices.Equal(ids, []int{0, 1}) {
		t.Errorf("mlx5_0 near %v, want [0 1]", ids)
	}
	if g := m.Near("mlx5_9"); len(g) != 0 {
		t.Errorf("mlx5_9 near %v, want none", g)
	}
	if g := (*Matrix)(nil).Near("mlx5_0"); g != nil {
		t.Errorf("nil matrix near %v", g)
	}
}
