package overlay

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/internal/promlab"
)

// A real Prometheus scraping one daemon's page: the port whose cable errs
// both ways carries the direction and a condition line naming the
// suspect; the clean one (direction none) carries neither (DESIGN.md
// section 15 on the fabric map).
func TestFabric_15_CableVerdictFromRealPrometheus(t *testing.T) {
	t.Parallel()
	page := func(int) string {
		return `# TYPE nichealth_port_info gauge
nichealth_port_info{device="mlx5_0",port="1",node_guid="0xb83fd20300a0b010",port_guid="0xb83fd20300a0b010"} 1
nichealth_port_info{device="mlx5_1",port="1",node_guid="0xb83fd20300a0b020",port_guid="0xb83fd20300a0b020"} 1
# TYPE nichealth_port_verdict gauge
nichealth_port_verdict{device="mlx5_0",port="1"} 1
nichealth_port_verdict{device="mlx5_1",port="1"} 0
# TYPE nichealth_cable_verdict gauge
nichealth_cable_verdict{device="mlx5_0",port="1",direction="both",suspect="cable"} 1
nichealth_cable_verdict{device="mlx5_1",port="1",direction="none",suspect=""} 1
`
	}
	prom := promlab.Start(t, nil, promlab.Target{Addr: promlab.Exposition(t, page), Labels: map[string]string{"instance": "node-a"}})
	prom.Wait(t, `nichealth_cable_verdict{direction="both"}`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	o, err := FromPrometheus(ctx, &http.Client{}, prom.URL)
	if err != nil {
		t.Fatal(err)
	}
	erring := o.Lookup(0, 1, 0xb83fd20300a0b010)
	if erring == nil || erring.Cable != "both" || !slices.Contains(erring.Conditions, "cable: errors both, suspect cable") {
		t.Fatalf("erring port %+v", erring)
	}
	clean := o.Lookup(0, 1, 0xb83fd20300a0b020)
	if clean == nil || clean.Cable != "" || len(clean.Conditions) != 0 {
		t.Fatalf("clean port %+v", clean)
	}
}
