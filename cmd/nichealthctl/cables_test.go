package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/dbusapi"
)

// TestCtl_15_Cables: one line per cable with the local port, the switch
// port at its other end, direction, suspect and evidence, as the daemon's
// port properties say; --json the same; exit 1 when a cable is suspect.
func TestCtl_15_Cables(t *testing.T) {
	f := newFixture(t)
	out, errs, code := ctl(t, f.bus, nil, "cables")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != exitOK || len(lines) != 4 || !strings.HasPrefix(lines[0], "LOCAL PORT") || !strings.Contains(lines[1], "mlx5_0/1 (ibp12s0)") || !strings.Contains(lines[1], "none") {
		t.Fatalf("clean cables: code %d\n%s%s", code, out, errs)
	}
	f.update(func(_ *dbusapi.ManagerView, ports *[]dbusapi.PortView) {
		p := &(*ports)[0]
		p.PeerName, p.PeerPort, p.PeerGUID = "ibsw-leaf3", 17, "0x0002c90300000001"
		p.CableDirection, p.CableSuspect, p.CablePart = "from-host", "unknown", "unknown part"
		p.CableEvidence = []string{"switch SymbolErrorCounter +55 in 2m0s"}
		b := &(*ports)[2]
		b.CableDirection, b.CableSuspect, b.CablePart = "from-host", "host-transceiver", "host transceiver (serial MT2245VS01234)"
		b.CableEvidence = []string{"lane 3 Tx laser bias 14.00 mA > 13.00 mA"}
	})
	out, errs, code = ctl(t, f.bus, nil, "cables")
	for _, want := range []string{"ibsw-leaf3 port 17", "from-host", "unknown part", "switch SymbolErrorCounter +55 in 2m0s",
		"mlx5_bond_0/1 (bond0)", "host transceiver (serial MT2245VS01234)", "lane 3 Tx laser bias 14.00 mA > 13.00 mA"} {
		if !strings.Contains(out, want) {
			t.Errorf("cables lacks %q (code %d):\n%s%s", want, code, out, errs)
		}
	}
	if code != exitFailed {
		t.Errorf("a suspect cable exits %d, want %d", code, exitFailed)
	}
	out, _, _ = ctl(t, f.bus, nil, "cables", "--json")
	var got []cableLine
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 3 || got[0].PeerName != "ibsw-leaf3" || got[0].Direction != "from-host" ||
		got[2].Suspect != "host-transceiver" || len(got[2].Evidence) != 1 || got[1].Direction != "none" || got[1].Evidence == nil {
		t.Fatalf("cables --json: %v %+v\n%s", err, got, out)
	}
	out, _, _ = ctl(t, f.bus, nil, "port", "mlx5_bond_0", "1")
	if !strings.Contains(out, "Cable: from-host; suspect host transceiver (serial MT2245VS01234); lane 3 Tx laser bias") {
		t.Errorf("port lacks the cable verdict:\n%s", out)
	}
	// status --json carries the verdict, for nichealth-fabric map --status.
	out, _, _ = ctl(t, f.bus, nil, "status", "--json")
	var st struct {
		Ports []struct {
			CableDirection string `json:"cableDirection"`
			CableSuspect   string `json:"cableSuspect"`
		} `json:"ports"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Ports) != 3 || st.Ports[2].CableDirection != "from-host" || st.Ports[2].CableSuspect != "host-transceiver" {
		t.Fatalf("status --json cable verdicts: %v %+v", err, st.Ports)
	}
	if _, _, code := ctl(t, f.bus, nil, "cables", "extra"); code != exitUsage {
		t.Errorf("cables extra: code %d", code)
	}
}
