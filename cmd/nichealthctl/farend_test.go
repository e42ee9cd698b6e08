package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/dbusapi"
)

// TestCtl_13_FarEndStale (DESIGN.md sections 9 and 13): a far end that
// stopped answering keeps its Far end line, says it is stale, since when
// and how many reads failed, and why the last one failed; one that answers
// says how fresh its counters are. The words come from the daemon's port
// properties, never judged here.
func TestCtl_13_FarEndStale(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	pv := dbusapi.PortView{Device: "mlx5_0", Port: 1, PeerGUID: "0xb83fd20300a01000", PeerPort: 17, PeerName: "ibsw-leaf1",
		PeerCounters: map[string]uint64{"SymbolErrorCounter": 55},
		PeerReadUSec: uint64(now.Add(-3*time.Minute - 12*time.Second).UnixMicro()), PeerReadErrors: 5, PeerReadError: "confirm the peer: timeout after 1s"}
	var b bytes.Buffer
	printPort(&b, pv, now)
	for _, want := range []string{
		"Far end: ibsw-leaf1 port 17 (node GUID 0xb83fd20300a01000), stale: last read 3m12s ago, 5 failed reads\n",
		"Far counters: SymbolErrorCounter=55\n",
		"Far error: confirm the peer: timeout after 1s\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("a stale far end lacks %q:\n%s", want, b.String())
		}
	}
	pv.PeerReadError, pv.PeerReadUSec = "", uint64(now.Add(-20*time.Second).UnixMicro())
	b.Reset()
	printPort(&b, pv, now)
	if out := b.String(); !strings.Contains(out, "Far end: ibsw-leaf1 port 17 (node GUID 0xb83fd20300a01000), read 20.0s ago\n") || strings.Contains(out, "stale") || strings.Contains(out, "Far error") {
		t.Errorf("an answering far end:\n%s", out)
	}
	pv = dbusapi.PortView{Device: "mlx5_0", Port: 1, PeerReadErrors: 1, PeerReadError: "find the peer: timeout after 1s"}
	b.Reset()
	printPort(&b, pv, now)
	if out := b.String(); !strings.Contains(out, "Far end: not found, 1 failed read\n") || !strings.Contains(out, "Far error: find the peer: timeout after 1s\n") {
		t.Errorf("a far end never found:\n%s", out)
	}

	// Through the bus, as an operator runs it.
	f := newFixture(t)
	read := time.Now().Add(-3*time.Minute - 12*time.Second)
	f.update(func(_ *dbusapi.ManagerView, ports *[]dbusapi.PortView) {
		p := &(*ports)[0]
		p.PeerGUID, p.PeerPort, p.PeerName = "0xb83fd20300a01000", 17, "ibsw-leaf1"
		p.PeerCounters = map[string]uint64{"SymbolErrorCounter": 55}
		p.PeerReadUSec, p.PeerReadErrors, p.PeerReadError = uint64(read.UnixMicro()), 5, "confirm the peer: timeout after 1s"
	})
	out, errs, _ := ctl(t, f.bus, nil, "port", "mlx5_0", "1")
	// The command runs a moment after read was taken: 3m12s or a little more.
	line := regexp.MustCompile(`Far end: ibsw-leaf1 port 17 \(node GUID 0xb83fd20300a01000\), stale: last read 3m1[2-9]s ago, 5 failed reads\n`)
	if !line.MatchString(out) || !strings.Contains(out, "SymbolErrorCounter=55") || !strings.Contains(out, "Far error: confirm the peer: timeout after 1s") {
		t.Fatalf("nichealthctl port on a stale far end:\n%s%s", out, errs)
	}
	out, _, _ = ctl(t, f.bus, nil, "port", "mlx5_0", "1", "--json")
	var got struct {
		PeerGUID       string `json:"peerGUID"`
		PeerReadUSec   uint64 `json:"peerReadUSec"`
		PeerReadErrors uint64 `json:"peerReadErrors"`
		PeerReadError  string `json:"peerReadError"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.PeerGUID != "0xb83fd20300a01000" || got.PeerReadUSec != uint64(read.UnixMicro()) ||
		got.PeerReadErrors != 5 || got.PeerReadError == "" {
		t.Fatalf("port --json: %v %+v\n%s", err, got, out)
	}
}
