package metrics

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/dbusapi"
)

// peerSource is one ACTIVE IB port whose far end is p.
func peerSource(p *health.Peer) *fakeSource {
	return &fakeSource{
		mgr: dbusapi.ManagerView{Version: "0.9.0", PollIntervalUSec: 1_000_000, LastPollUSec: 1_700_000_100_000_000, Healthy: true,
			MonitoredPorts: 1, MonitoredNICs: 1, Ready: true},
		ports: []dbusapi.PortView{{Device: "mlx5_0", Port: 1, LinkLayer: "InfiniBand", Role: "Compute", Rate: "400 Gb/sec (4X NDR)",
			State: "ACTIVE", PhysState: "LinkUp", Healthy: true}},
		peers: map[string]*health.Peer{"mlx5_0/1": p},
	}
}

func leaf1(found bool, readAt time.Time, errs uint64, guid string) *health.Peer {
	return &health.Peer{GUID: guid, PortGUID: guid, Port: 17, LID: 3, Name: "ibsw-leaf1", Switch: true,
		Found: found, ReadAt: readAt, ReadErrors: errs,
		Counters: []health.PeerCounter{{Field: "SymbolErrorCounter", Value: 55, Bits: 16, Judged: true, Latched: []string{"symbol_error"}}}}
}

// peerFamilies are the far end's families of a page, by name.
func peerFamilies(t *testing.T, page string) map[string]*promFamily {
	t.Helper()
	out := map[string]*promFamily{}
	for name, f := range mustParse(t, page) {
		if strings.HasPrefix(name, "nichealth_peer_port_") {
			out[name] = f
		}
	}
	return out
}

// DESIGN.md section 13 ("a failed read leaves the last series in place"):
// the far end's families, pinned by name, type and labels; while reads
// fail (the peer no longer answers: Found false) every series stays with
// its last value and labels, its read timestamp stays at the last good
// read, and the read errors count.
func TestMetrics_Design13_PeerSeriesStayAgedWhileReadsFail(t *testing.T) {
	read := time.Unix(1_700_000_000, 500_000_000)
	want := map[string]struct {
		typ    string
		labels []string
	}{
		"nichealth_peer_port_counter":                {"gauge", []string{"device", "port", "peer_guid", "peer_port", "peer_name", "counter"}},
		"nichealth_peer_port_counter_breached":       {"gauge", []string{"device", "port", "peer_guid", "peer_port", "peer_name", "counter"}},
		"nichealth_peer_port_read_timestamp_seconds": {"gauge", []string{"device", "port", "peer_guid", "peer_port", "peer_name"}},
		"nichealth_peer_port_read_errors_total":      {"counter", []string{"device", "port"}},
	}
	var pages []map[string]*promFamily
	for _, p := range []*health.Peer{
		leaf1(true, read, 0, "0xb83fd20300a01000"),
		leaf1(false, read, 4, "0xb83fd20300a01000"), // reads failing since
	} {
		_, page, _ := scrape(t, New().Handler(peerSource(p)))
		fams := peerFamilies(t, page)
		for name, w := range want {
			f := fams[name]
			if f == nil || f.typ != w.typ || len(f.samples) != 1 {
				t.Fatalf("%s: %+v\n%s", name, f, page)
			}
			var labels []string
			for l := range f.samples[0].labels {
				labels = append(labels, l)
			}
			slices.Sort(labels)
			wl := slices.Clone(w.labels)
			slices.Sort(wl)
			if !slices.Equal(labels, wl) {
				t.Errorf("%s labels %v, want %v", name, labels, wl)
			}
		}
		pages = append(pages, fams)
	}
	fresh, stale := pages[0], pages[1]
	for _, name := range []string{"nichealth_peer_port_counter", "nichealth_peer_port_counter_breached", "nichealth_peer_port_read_timestamp_seconds"} {
		a, b := fresh[name].samples[0], stale[name].samples[0]
		if !maps.Equal(a.labels, b.labels) || a.value != b.value {
			t.Errorf("%s changed while reads failed: %v %v -> %v %v", name, a.labels, a.value, b.labels, b.value)
		}
	}
	if v := stale["nichealth_peer_port_read_timestamp_seconds"].samples[0].value; v != 1_700_000_000.5 {
		t.Errorf("read timestamp %v, want the last good read 1700000000.5", v)
	}
	if v := stale["nichealth_peer_port_counter"].samples[0].value; v != 55 {
		t.Errorf("last value %v, want 55", v)
	}
	if e := fresh["nichealth_peer_port_read_errors_total"].samples[0].value; e != 0 {
		t.Errorf("read errors before: %v", e)
	}
	if e := stale["nichealth_peer_port_read_errors_total"].samples[0].value; e != 4 {
		t.Errorf("read errors %v, want 4", e)
	}

	// Never read yet but failing: only the error count, no series of a
	// peer that was never read.
	_, page, _ := scrape(t, New().Handler(peerSource(&health.Peer{Err: "find the peer: timeout", ReadErrors: 2})))
	fams := peerFamilies(t, page)
	if len(fams) != 1 || fams["nichealth_peer_port_read_errors_total"] == nil || fams["nichealth_peer_port_read_errors_total"].samples[0].value != 2 {
		t.Errorf("a far end never read: %v\n%s", fams, page)
	}
}

// At most one peer's series per local port: a peer whose GUID changes on
// every read replaces its series; the series of the GUIDs seen before are
// not exported any more.
func TestMetrics_Design13_OnePeerSeriesSetPerPort(t *testing.T) {
	src := peerSource(leaf1(true, time.Unix(1_700_000_000, 0), 0, "0xb83fd20300a01000"))
	h := New().Handler(src)
	for i, guid := range []string{"0xb83fd20300a01000", "0xb83fd20300a01001", "0xb83fd20300a01002"} {
		src.mu.Lock()
		src.peers["mlx5_0/1"] = leaf1(true, time.Unix(1_700_000_000+int64(i), 0), 0, guid)
		src.mu.Unlock()
		_, page, _ := scrape(t, h)
		for name, f := range peerFamilies(t, page) {
			if name == "nichealth_peer_port_read_errors_total" {
				continue
			}
			if len(f.samples) != 1 || f.samples[0].labels["peer_guid"] != guid {
				t.Fatalf("read %d: %s has %d series: %+v", i, name, len(f.samples), f.samples)
			}
		}
	}
}

// DESIGN.md section 13: the node exports its [farEnd] interval, so the
// staleness rule (NICPeerPortUnread: three intervals) holds a node that
// reads every 5 minutes to 15, not to the default's 3; a node whose far
// end is off exports none.
func TestMetrics_Design13_PeerReadIntervalIsTheNodes(t *testing.T) {
	src := peerSource(leaf1(true, time.Unix(1_700_000_000, 0), 0, "0xb83fd20300a01000"))
	src.farEndInterval = 5 * time.Minute
	_, page, _ := scrape(t, New().Handler(src))
	f := peerFamilies(t, page)["nichealth_peer_port_read_interval_seconds"]
	if f == nil || f.typ != "gauge" || len(f.samples) != 1 || len(f.samples[0].labels) != 0 || f.samples[0].value != 300 {
		t.Fatalf("interval family %+v, want one unlabelled gauge of 300\n%s", f, page)
	}
	src.farEndInterval = 0
	_, page, _ = scrape(t, New().Handler(src))
	if f := peerFamilies(t, page)["nichealth_peer_port_read_interval_seconds"]; f != nil {
		t.Errorf("the far end off, yet an interval is exported: %+v", f)
	}
}
