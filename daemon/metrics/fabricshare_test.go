package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/mad/fabricshare"
)

type fabricFake struct {
	*fakeSource
	rd *fabricshare.ShareReading
}

func (f fabricFake) Fabric() *fabricshare.ShareReading { return f.rd }

// The fabric share's contract, as the fleet's rules and the map read it:
// every PortCounters field of each read port by its perfquery name, the
// failed reads and the last good read of every assigned port, the list's
// size and whether the file in force was the last one written.
func TestMetrics_14_FabricShare(t *testing.T) {
	read := &fabricshare.SharePort{
		Entry: fabricshare.Entry{SwitchGUID: "0xb83fd20300a02000", SwitchName: `ibsw "spine" 2`, SwitchLID: 2, Port: 33},
		Read:  true, ReadAt: time.Unix(1_700_000_000, 500_000_000), Errors: 2, Wide: true,
	}
	read.Counters[0] = 1 << 40 // SymbolErrorCounter, 64-bit
	read.Counters[16] = 9      // PortXmitWait
	unread := &fabricshare.SharePort{Entry: fabricshare.Entry{SwitchGUID: "0xb83fd20300a01000", SwitchName: "ibsw-leaf1", SwitchLID: 1, Port: 34}, Errors: 5, Err: "timeout"}
	src := fabricFake{unhealthySource(), &fabricshare.ShareReading{Valid: false, Refused: "x", Ports: []*fabricshare.SharePort{read, unread}}}
	_, page, _ := scrape(t, New().Handler(src))
	fams := mustParse(t, page)
	for _, line := range []string{
		"# TYPE nichealth_fabric_port_counter gauge",
		"# TYPE nichealth_fabric_port_read_errors_total counter",
		"# TYPE nichealth_fabric_port_last_read_timestamp_seconds gauge",
		"# TYPE nichealth_fabric_assigned_ports gauge",
		"# TYPE nichealth_fabric_assignment_valid gauge",
		`nichealth_fabric_port_counter{switch_guid="0xb83fd20300a02000",switch_name="ibsw \"spine\" 2",port="33",counter="SymbolErrorCounter"} 1099511627776`,
		`nichealth_fabric_port_counter{switch_guid="0xb83fd20300a02000",switch_name="ibsw \"spine\" 2",port="33",counter="PortXmitWait"} 9`,
		`nichealth_fabric_port_counter{switch_guid="0xb83fd20300a02000",switch_name="ibsw \"spine\" 2",port="33",counter="VL15Dropped"} 0`,
		`nichealth_fabric_port_read_errors_total{switch_guid="0xb83fd20300a02000",switch_name="ibsw \"spine\" 2",port="33"} 2`,
		`nichealth_fabric_port_last_read_timestamp_seconds{switch_guid="0xb83fd20300a02000",switch_name="ibsw \"spine\" 2",port="33"} 1.7000000005e+09`,
		`nichealth_fabric_port_read_errors_total{switch_guid="0xb83fd20300a01000",switch_name="ibsw-leaf1",port="34"} 5`,
		"nichealth_fabric_assigned_ports 2",
		"nichealth_fabric_assignment_valid 0",
	} {
		if !strings.Contains(page, "\n"+line+"\n") {
			t.Errorf("page lacks %s", line)
		}
	}
	if n := len(fams["nichealth_fabric_port_counter"].samples); n != 17 {
		t.Errorf("%d counter samples, want the 17 fields of the one port read", n)
	}
	if strings.Contains(page, `port_last_read_timestamp_seconds{switch_guid="0xb83fd20300a01000"`) {
		t.Errorf("a port never read has a last-read time")
	}

	// No share read: the two gauges alone, the list empty and nothing refused.
	_, page, _ = scrape(t, New().Handler(fabricFake{unhealthySource(), nil}))
	if !strings.Contains(page, "\nnichealth_fabric_assigned_ports 0\n") || !strings.Contains(page, "\nnichealth_fabric_assignment_valid 1\n") ||
		strings.Contains(page, "\nnichealth_fabric_port_") {
		t.Errorf("without a share:\n%s", page)
	}
}
