package metrics

import (
	"net/http"
	"strings"
	"testing"
)

// TestMetrics_15_CableVerdict: every port's cable verdict is one series,
// nichealth_cable_verdict{device,port,direction,suspect} 1, read from the
// snapshot: a clean port says direction none with no suspect, and a port
// before its first judgement (no direction) has none.
func TestMetrics_15_CableVerdict(t *testing.T) {
	src := unhealthySource()
	src.ports[0].CableDirection, src.ports[0].CableSuspect = "both", "cable"
	src.ports[1].CableDirection = "none"
	code, page, _ := scrape(t, New().Handler(src))
	if code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	mustParse(t, page)
	for _, want := range []string{
		`nichealth_cable_verdict{device="mlx5_0",port="1",direction="both",suspect="cable"} 1`,
		`nichealth_cable_verdict{device="mlx5_8",port="1",direction="none",suspect=""} 1`,
		"# TYPE nichealth_cable_verdict gauge",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if n := strings.Count(page, "\nnichealth_cable_verdict{"); n != 2 {
		t.Errorf("%d cable verdict series, want one per port (2)", n)
	}
	src.ports[1].CableDirection = ""
	_, page, _ = scrape(t, New().Handler(src))
	if strings.Contains(page, `nichealth_cable_verdict{device="mlx5_8"`) {
		t.Error("a port not judged yet has a verdict series")
	}
}
