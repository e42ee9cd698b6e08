package fabricshare

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/internal/iblab"
	"github.com/nichealth/nichealthd/mad"
	"github.com/nichealth/nichealthd/mad/wire"
)

// The reader over the real helper in the lab fabric: an assigned port's
// counters are what perfquery reads, from PortCountersExtended where the
// simulated switch offers it; an entry whose LID the subnet manager gave
// another switch (leaf 2's GUID at leaf 1's LID, as after a renumbering)
// is not read, and says so with the fix.
func TestLab_ReadsTheShareThroughTheHelper(t *testing.T) {
	if err := iblab.Tools(); err != nil {
		iblab.Require(t, err)
	}
	bin := filepath.Join(t.TempDir(), "nichealth-mad")
	cmd := exec.Command("go", "build", "-o", bin, "../../cmd/nichealth-mad")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build nichealth-mad (needs libibumad-dev, libibmad-dev): %v\n%s", err, out)
	}
	l, err := iblab.Start(iblab.Options{Fabric: iblab.TwoLeaves, SM: iblab.SMHost, Active: []string{iblab.GPUA017}})
	iblab.Require(t, err)
	defer l.Close()
	c := mad.New(mad.Config{Path: bin, Env: l.Env(iblab.GPUA017), Dir: l.Dir})
	leaf1, err := c.Peer(t.Context(), wire.Local{GUID: iblab.GPUA017PortGUID}, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.PerformanceSet(iblab.Leaf1, 33, "PortCounters.SymbolErrorCounter", 77); err != nil {
		t.Fatal(err)
	}
	ports, err := c.Ports(t.Context(), 2*time.Second)
	if err != nil || len(ports) == 0 || ports[0].LID == 0 {
		t.Fatalf("local ports: %+v %v", ports, err)
	}
	// Issue 40 row 8: gpu-a017's own node GUID and LID (a CA), and port
	// 200 of leaf 1 (a 41-port switch), as a crafted list would hold.
	const caGUID = "0xa088c20300ab0000"
	path := filepath.Join(t.TempDir(), "share.json")
	writeFile(t, path, fmt.Sprintf(`{"assignments": {"gpu-a017": [
		{"switchGUID": %q, "port": 33, "switchName": "ibsw-leaf1", "switchLID": %d},
		{"switchGUID": %q, "port": 200, "switchName": "ibsw-leaf1", "switchLID": %d},
		{"switchGUID": %q, "port": 1, "switchName": "gpu-a017 mlx5_0", "switchLID": %d},
		{"switchGUID": "0xb83fd20300a02000", "port": 34, "switchName": "ibsw-leaf2", "switchLID": %d}]}}`,
		iblab.Leaf1GUID, leaf1.LID, iblab.Leaf1GUID, leaf1.LID, caGUID, ports[0].LID, leaf1.LID))
	r := StartShareReader(ShareConfig{Assignment: path, Host: "gpu-a017", Interval: 400 * time.Millisecond, Timeout: time.Second}, c, nil)
	defer r.Close()
	rd := waitFor(t, r, "leaf 1 port 33 read and leaf 2's entry refused at the fabric", func(rd *ShareReading) bool {
		p, q := portOf(rd, iblab.Leaf1GUID, 33), portOf(rd, "0xb83fd20300a02000", 34)
		return p != nil && p.Read && q != nil && q.Errors > 1
	})
	high, ca := portOf(rd, iblab.Leaf1GUID, 200), portOf(rd, caGUID, 1)
	if high == nil || high.Refused != "switch 0xb83fd20300a01000 (ibsw-leaf1) has 41 ports, so no port 200: re-run nichealth-fabric plan" || high.Errors != 0 || high.Read {
		t.Errorf("port 200 of a 41-port switch: %+v", high)
	}
	if ca == nil || !strings.Contains(ca.Refused, caGUID+fmt.Sprintf(" at LID %d is a CA, not a switch", ports[0].LID)) || ca.Errors != 0 || ca.Read {
		t.Errorf("a CA's GUID and LID: %+v", ca)
	}
	p := portOf(rd, iblab.Leaf1GUID, 33)
	out, err := l.Run(iblab.GPUA017, "perfquery", "-x", strconv.Itoa(leaf1.LID), "33")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`PortXmitData:\.+(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("perfquery -x:\n%s", out)
	}
	xmit, _ := strconv.ParseUint(m[1], 10, 64)
	if p.Counters[0] != 77 || p.Counters[12] > xmit || p.Errors != 0 {
		t.Fatalf("leaf 1 port 33: %+v; perfquery -x:\n%s", p, out)
	}
	q := portOf(rd, "0xb83fd20300a02000", 34)
	want := fmt.Sprintf("LID %d is now switch %s, not switch 0xb83fd20300a02000 (ibsw-leaf2): the subnet manager reassigned LIDs; re-run nichealth-fabric plan", leaf1.LID, iblab.Leaf1GUID)
	if q.Read || q.Err != want {
		t.Fatalf("leaf 2 port 34: %+v\nwant %q", q, want)
	}
}
