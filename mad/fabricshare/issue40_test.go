package fabricshare

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/internal/syncbuf"
)

// shareFile is a host's list of n ports, port 1.. on switch LID 1 then
// LID 2 (254 ports each at most), plus extra entries.
func shareFile(n int, extra ...string) string {
	var b strings.Builder
	b.WriteString(`{"assignments": {"gpu-a017": [`)
	for i := range n {
		lid, port := 1+i/254, 1+i%254
		fmt.Fprintf(&b, `{"switchGUID": "0xb83fd20300a0%d000", "port": %d, "switchName": "ibsw-leaf%d", "switchLID": %d},`, lid, port, lid, lid)
	}
	for _, e := range extra {
		b.WriteString(e + ",")
	}
	return strings.TrimSuffix(b.String(), ",") + "]}}"
}

// TestIssue40Row6_ChangingShareKeepsEachPortsPlace: a list rewritten
// every 400 ms (one entry added, then removed again) while a round of 300
// ports takes 3 s: each change ends the round, and the next one starts
// with the ports waiting longest, so every port is read within a few
// rounds' time, not only the first few of the list again and again.
func TestIssue40Row6_ChangingShareKeepsEachPortsPlace(t *testing.T) {
	t.Parallel()
	f := newFabric()
	f.numPorts = 254
	path := filepath.Join(t.TempDir(), "share.json")
	const extra = `{"switchGUID": "0xb83fd20300a02000", "port": 254, "switchName": "ibsw-leaf2", "switchLID": 2}`
	writeFile(t, path, shareFile(300))
	r := start(t, f, path, 3*time.Second)
	var stop atomic.Bool
	swaps := make(chan int)
	go func() {
		n := 0
		for !stop.Load() {
			time.Sleep(400 * time.Millisecond)
			if n%2 == 0 {
				writeFile(t, path, shareFile(300, extra))
			} else {
				writeFile(t, path, shareFile(300))
			}
			n++
		}
		swaps <- n
	}()
	deadline := time.Now().Add(20 * time.Second)
	read := 0
	for time.Now().Before(deadline) {
		read = 0
		for _, p := range r.Latest().Ports {
			if p.Read {
				read++
			}
		}
		if read >= 300 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop.Store(true)
	n := <-swaps
	if read < 300 {
		t.Fatalf("%d of 300 ports read in 20 s of a list changed every 400 ms (%d changes)", read, n)
	}
	t.Logf("every port read through %d changes of the list", n)
}

// TestIssue40Row8_EntriesCheckedAgainstWhatAnswers: an entry whose GUID
// and LID are a CA's, and one for port 200 of a 41-port switch, are
// refused once each with the reason: never read (no PMA request), not
// counted as failed reads, not asked again round after round, and said
// once in the log. The other entries are read.
func TestIssue40Row8_EntriesCheckedAgainstWhatAnswers(t *testing.T) {
	t.Parallel()
	f := newFabric()
	f.nodes[3] = "0xa088c20300ab0003" // an HCA
	path := filepath.Join(t.TempDir(), "share.json")
	writeFile(t, path, shareFile(2,
		`{"switchGUID": "0xa088c20300ab0003", "port": 1, "switchName": "gpu-b001 mlx5_0", "switchLID": 3}`,
		`{"switchGUID": "0xb83fd20300a01000", "port": 200, "switchName": "ibsw-leaf1", "switchLID": 1}`))
	var log syncbuf.Buffer
	r := StartShareReader(ShareConfig{Assignment: path, Host: "gpu-a017", Interval: 50 * time.Millisecond, Timeout: time.Second}, f,
		slog.New(slog.NewTextHandler(&log, nil)))
	t.Cleanup(r.Close)
	// Ten rounds.
	waitFor(t, r, "ten rounds", func(rd *ShareReading) bool {
		p := portOf(rd, "0xb83fd20300a01000", 1)
		return p != nil && p.Read && f.count("pcx") >= 20
	})
	r.Close()
	rd := r.Latest()
	ca, high := portOf(rd, "0xa088c20300ab0003", 1), portOf(rd, "0xb83fd20300a01000", 200)
	if ca == nil || !strings.Contains(ca.Refused, "0xa088c20300ab0003 at LID 3 is a CA, not a switch") || ca.Errors != 0 || ca.Read {
		t.Errorf("the CA's entry: %+v", ca)
	}
	if high == nil || !strings.Contains(high.Refused, "has 41 ports, so no port 200") || high.Errors != 0 || high.Read {
		t.Errorf("port 200 of a 41-port switch: %+v", high)
	}
	if good := portOf(rd, "0xb83fd20300a01000", 2); good == nil || !good.Read {
		t.Errorf("a good entry was not read: %+v", good)
	}
	if n := strings.Count(log.String(), "fabric assignment entry refused"); n != 2 {
		t.Errorf("refusals said %d times, want once each:\n%s", n, log.String())
	}
	// NodeInfo of the CA's LID: asked once, in the first round only,
	// while leaf 1's is asked every round.
	if n, leaf := f.count("nodeinfo of 3"), f.count("nodeinfo of 1"); n != 1 || leaf < 10 {
		t.Errorf("NodeInfo asked %d times of the CA's LID, %d of leaf 1's, want once and every round", n, leaf)
	}
}
