package promlab

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/internal/component"
)

// The fabric share's page is what Prometheus' own parser and linter
// accept (promtool check metrics reads it on stdin), but for one lint:
// the series name nichealth_fabric_port_counter ends in a type's word.
func TestFabricPage_PromtoolAcceptsIt(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		component.Missing(t, "promtool not in PATH (apt-get install prometheus)")
		return
	}
	page := fabricPage(3, true, []FabricPort{
		{SwitchGUID: "0x1", SwitchName: `quote " back \ new` + "\nline", Port: 7, SymbolErrorsPerScrape: 5},
		{SwitchGUID: "0x2", SwitchName: "leaf", Port: 1, LastReadAge: time.Hour},
	}, time.Unix(1_800_000_000, 0))
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = strings.NewReader(page)
	out, _ := cmd.CombinedOutput()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line != "" && line != "nichealth_fabric_port_counter metric name should not include type 'counter'" {
			t.Errorf("promtool check metrics: %s\n%s", line, page)
		}
	}
	for _, want := range []string{
		`nichealth_fabric_port_counter{switch_guid="0x1",switch_name="quote \" back \\ new\nline",port="7",counter="SymbolErrorCounter"} 15`,
		`nichealth_fabric_port_last_read_timestamp_seconds{switch_guid="0x2",switch_name="leaf",port="1"} 1799996400.000`,
		"nichealth_fabric_assigned_ports 2\n", "nichealth_fabric_assignment_valid 1\n",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
}
