package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/mad/fabricshare"
)

// TestIssue40Row8_RefusedEntriesAreNotFabricPorts: an entry refused for
// what answers at its LID (a CA) has no fabric port series; the refusals
// are counted.
func TestIssue40Row8_RefusedEntriesAreNotFabricPorts(t *testing.T) {
	good := &fabricshare.SharePort{Entry: fabricshare.Entry{SwitchGUID: "0xb83fd20300a01000", SwitchName: "ibsw-leaf1", SwitchLID: 1, Port: 33},
		Read: true, ReadAt: time.Unix(1_700_000_000, 0)}
	ca := &fabricshare.SharePort{Entry: fabricshare.Entry{SwitchGUID: "0xa088c20300ab0003", SwitchName: "gpu-b001 mlx5_0", SwitchLID: 3, Port: 1},
		Refused: "0xa088c20300ab0003 at LID 3 is a CA, not a switch"}
	high := &fabricshare.SharePort{Entry: fabricshare.Entry{SwitchGUID: "0xb83fd20300a01000", SwitchName: "ibsw-leaf1", SwitchLID: 1, Port: 200},
		Refused: "has 41 ports"}
	_, page, _ := scrape(t, New().Handler(fabricFake{unhealthySource(), &fabricshare.ShareReading{Valid: true, Ports: []*fabricshare.SharePort{ca, good, high}}}))
	fams := mustParse(t, page)
	if strings.Contains(page, "0xa088c20300ab0003") || strings.Contains(page, `port="200"`) {
		t.Errorf("a refused entry is exported as a fabric port")
	}
	if n := len(fams["nichealth_fabric_port_counter"].samples); n != 17 {
		t.Errorf("%d counter series, want the 17 of the one port read", n)
	}
	if !strings.Contains(page, "\nnichealth_fabric_refused_ports 2\n") || !strings.Contains(page, "\nnichealth_fabric_assigned_ports 3\n") {
		t.Errorf("refused or assigned count missing")
	}
}
