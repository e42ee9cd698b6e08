package farend

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/mad/wire"
)

// recabling is the fake fabric with one recabling: at the first NodeInfo
// confirmation of the known peer (a round that would otherwise only
// confirm it), the cable is on another switch, plugged into the same port
// number. It records the LID each PortCounters went to.
type recabling struct {
	*fakeClient
	mu      sync.Mutex
	swapped bool
	lids    []int
}

// newSwitch is the other switch: same port number 17, another node GUID
// and LID.
var newSwitch = wire.Peer{NodeGUID: "0xb83fd20300a02000", PortGUID: "0xb83fd20300a02000", NodeType: 2, NumPorts: 41, Port: 17, LID: 9, Description: "MF0;ibsw-leaf2:MQM8700/U1", State: 4, PhysState: 5}

func (c *recabling) PeerNode(ctx context.Context, l wire.Local, d time.Duration) (wire.Peer, error) {
	c.mu.Lock()
	if !c.swapped {
		c.swapped = true
		c.fakeClient.mu.Lock()
		c.fakeClient.peers[l.GUID] = newSwitch
		c.fakeClient.mu.Unlock()
	}
	c.mu.Unlock()
	return c.fakeClient.PeerNode(ctx, l, d)
}

func (c *recabling) PortCounters(ctx context.Context, l wire.Local, lid, port int, d time.Duration) (wire.PortCounters, error) {
	c.mu.Lock()
	c.lids = append(c.lids, lid)
	c.mu.Unlock()
	return c.fakeClient.PortCounters(ctx, l, lid, port, d)
}

// TestReader_40_12_PeerConfirmedByNodeGUID: a known peer is confirmed by
// its node GUID, not only by the port number at the far end: a cable
// moved to another switch's port 17 is a new peer at once (its NodeInfo,
// its LID, its PMA), and no counter is read from the old switch's LID as
// if it were this cable's.
func TestReader_40_12_PeerConfirmedByNodeGUID(t *testing.T) {
	c := &recabling{fakeClient: newFake()}
	r := StartPeerReader(PeerConfig{Interval: 15 * time.Millisecond, Timeout: time.Second, UmadDir: umadDir(t)}, c, nil)
	defer r.Close()
	r.SetTargets([]Target{up})
	rd := waitFor(t, r, 0, func(rd *PeerReading) bool { p := rd.Port("mlx5_0", 1); return p != nil && p.Read })
	if p := rd.Port("mlx5_0", 1); p.Peer.NodeGUID != "0xb83fd20300a01000" {
		t.Fatalf("first peer %+v", p.Peer)
	}
	// The recabling happens at the next round's confirmation: the first
	// reading after it is the one that must show the new switch.
	seq := rd.Port("mlx5_0", 1).Seq
	rd = waitFor(t, r, rd.Gen, func(rd *PeerReading) bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		p := rd.Port("mlx5_0", 1)
		return c.swapped && p.Read && p.Seq > seq
	})
	p := rd.Port("mlx5_0", 1)
	c.mu.Lock()
	lastLID := c.lids[len(c.lids)-1]
	c.mu.Unlock()
	if p.Peer.NodeGUID != newSwitch.NodeGUID || p.Peer.LID != 9 || p.Peer.Name != newSwitch.Description || lastLID != 9 {
		t.Fatalf("after the recabling: peer %s LID %d %q, counters read at LID %d; want %s at LID 9",
			p.Peer.NodeGUID, p.Peer.LID, p.Peer.Name, lastLID, newSwitch.NodeGUID)
	}
}

// TestReader_40_12_DataCounters64BitWheneverExtendedIsOffered: a PMA
// that offers PortCountersExtended (ClassPortInfo CapabilityMask bit 9,
// or bit 10 without the IETF counters) gives its 64-bit data counters
// even when its error counters stay 16/8-bit (CapabilityMask2 bit 1
// clear): PortCounters' 32-bit PortXmitData saturates within a second on
// an HDR link. The bits are the specification's, as literals.
func TestReader_40_12_DataCounters64BitWheneverExtendedIsOffered(t *testing.T) {
	for _, capMask := range []uint32{1 << 9, 1 << 10} {
		f := newFake()
		f.sym = 3
		f.cpi = wire.ClassPortInfo{CapMask: capMask}
		r := StartPeerReader(PeerConfig{Interval: time.Hour, Timeout: time.Second, UmadDir: umadDir(t)}, f, nil)
		r.SetTargets([]Target{up})
		rd := waitFor(t, r, 0, func(rd *PeerReading) bool { p := rd.Port("mlx5_0", 1); return p != nil && p.Read })
		r.Close()
		p := rd.Port("mlx5_0", 1)
		if p.Ext == nil || p.Ext.PortXmitData != 7 || p.Counters.PortXmitData != 7 || p.Counters.SymbolErrorCounter != 3 || p.Wide || p.Ext.Errors != nil {
			t.Errorf("CapabilityMask %#x: %+v (ext %+v): want the 64-bit data counters beside PortCounters' errors", capMask, p, p.Ext)
		}
		if f.count("ext") != 1 || f.count("counters") != 1 {
			t.Errorf("CapabilityMask %#x: %d PortCountersExtended and %d PortCounters reads, want one each", capMask, f.count("ext"), f.count("counters"))
		}
	}
	// Neither bit: PortCounters alone, nothing asked of a PMA that does
	// not offer it.
	f := newFake()
	f.cpi = wire.ClassPortInfo{CapMask: 1<<8 | 1<<12, CapMask2: 1 << 1}
	r := StartPeerReader(PeerConfig{Interval: time.Hour, Timeout: time.Second, UmadDir: umadDir(t)}, f, nil)
	defer r.Close()
	r.SetTargets([]Target{up})
	waitFor(t, r, 0, func(rd *PeerReading) bool { p := rd.Port("mlx5_0", 1); return p != nil && p.Read })
	if f.count("ext") != 0 {
		t.Error("PortCountersExtended asked of a PMA whose CapabilityMask offers neither bit 9 nor bit 10")
	}
}
