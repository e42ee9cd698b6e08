package fabricshare

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/mad/wire"
)

// lidWatch records the LIDs counters are read at once armed, which it is
// by the first NodeInfo that finds an HCA at LID 2: from then on, every
// counter read there is one the reader was told not to make.
type lidWatch struct {
	*fakeFabric
	mu    sync.Mutex
	armed bool
	lids  []int
}

func (w *lidWatch) note(lid int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.armed {
		w.lids = append(w.lids, lid)
	}
}

func (w *lidWatch) NodeInfo(ctx context.Context, l wire.Local, lid int, d time.Duration) (wire.Node, error) {
	n, err := w.fakeFabric.NodeInfo(ctx, l, lid, d)
	if err == nil && lid == 2 && n.NodeType == 1 {
		w.mu.Lock()
		w.armed = true
		w.mu.Unlock()
	}
	return n, err
}

func (w *lidWatch) PortCounters(ctx context.Context, l wire.Local, lid, port int, d time.Duration) (wire.PortCounters, error) {
	w.note(lid)
	return w.fakeFabric.PortCounters(ctx, l, lid, port, d)
}

func (w *lidWatch) PortCountersExt(ctx context.Context, l wire.Local, lid, port int, withErrors bool, d time.Duration) (wire.PortCountersExt, error) {
	w.note(lid)
	return w.fakeFabric.PortCountersExt(ctx, l, lid, port, withErrors, d)
}

// TestReader_40_12_LIDReassignedAfterAGoodRoundRefused: a switch whose
// LID answered as planned is checked again every round: once the subnet
// manager gives that LID to an HCA, the very next round refuses the port
// with the reason and reads no counter at that LID (they would be the
// HCA's, exported as the switch port's), while the other switch's ports
// are still read.
func TestReader_40_12_LIDReassignedAfterAGoodRoundRefused(t *testing.T) {
	t.Parallel()
	w := &lidWatch{fakeFabric: newFabric()}
	path := filepath.Join(t.TempDir(), "share.json")
	writeFile(t, path, goodFile)
	r := StartShareReader(ShareConfig{Assignment: path, Host: "gpu-a017", Interval: 150 * time.Millisecond, Timeout: time.Second}, w, nil)
	t.Cleanup(r.Close)
	good := waitFor(t, r, "leaf 2 port 34 read", func(rd *ShareReading) bool {
		p := portOf(rd, "0xb83fd20300a02000", 34)
		return p != nil && p.Read && p.Err == ""
	})
	before := portOf(good, "0xb83fd20300a01000", 33).ReadAt
	w.fakeFabric.mu.Lock()
	w.fakeFabric.nodes[2] = "0xa088c20300ac0000" // an HCA now holds leaf 2's LID
	w.fakeFabric.mu.Unlock()
	want := "LID 2 is now CA 0xa088c20300ac0000, not switch 0xb83fd20300a02000 (ibsw-leaf2): the subnet manager reassigned LIDs; re-run nichealth-fabric plan"
	rd := waitFor(t, r, "leaf 2 port 34 refused", func(rd *ShareReading) bool {
		p := portOf(rd, "0xb83fd20300a02000", 34)
		return p != nil && p.Err == want
	})
	// Leaf 1 is read on, in the same rounds.
	rd = waitFor(t, r, "leaf 1 read after the reassignment", func(rd *ShareReading) bool {
		q := portOf(rd, "0xb83fd20300a01000", 33)
		return q != nil && q.Read && q.Err == "" && q.ReadAt.After(before)
	})
	if p := portOf(rd, "0xb83fd20300a02000", 34); p.Err != want || p.Errors < 1 {
		t.Fatalf("leaf 2 port 34 after the reassignment: %+v", p)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, lid := range w.lids {
		if lid == 2 {
			t.Fatalf("counters read at LID 2 after it was given to an HCA (reads at LIDs %v)", w.lids)
		}
	}
}

// TestReader_40_12_DataCounters64BitWheneverExtendedIsOffered: a switch
// PMA that offers PortCountersExtended (CapabilityMask bit 9 or 10) but
// not its error counters (CapabilityMask2 bit 1 clear) gives its 64-bit
// data counters beside PortCounters' errors; one that offers neither bit
// is asked PortCounters alone.
func TestReader_40_12_DataCounters64BitWheneverExtendedIsOffered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mask uint32
		ext  bool
	}{{1 << 9, true}, {1 << 10, true}, {1<<8 | 1<<12, false}} {
		f := newFabric()
		f.cpi = wire.ClassPortInfo{CapMask: tc.mask}
		f.sym = 5
		path := filepath.Join(t.TempDir(), "share.json")
		writeFile(t, path, goodFile)
		r := StartShareReader(ShareConfig{Assignment: path, Host: "gpu-a017", Interval: 150 * time.Millisecond, Timeout: time.Second}, f, nil)
		rd := waitFor(t, r, "leaf 1 port 33 read", func(rd *ShareReading) bool {
			p := portOf(rd, "0xb83fd20300a01000", 33)
			return p != nil && p.Read
		})
		r.Close()
		p := portOf(rd, "0xb83fd20300a01000", 33)
		// Fields' order: SymbolErrorCounter first, PortXmitData 13th.
		xmit, sym := p.Counters[12], p.Counters[0]
		wantXmit := uint64(1*1000 + 33) // PortCounters' 32-bit value
		if tc.ext {
			wantXmit = 1 << 40
		}
		if xmit != wantXmit || sym != 5 || p.Wide {
			t.Errorf("CapabilityMask %#x: PortXmitData %d, SymbolErrorCounter %d, wide %v; want %d, 5, false", tc.mask, xmit, sym, p.Wide, wantXmit)
		}
		if got := f.count("pcx") > 0; got != tc.ext {
			t.Errorf("CapabilityMask %#x: PortCountersExtended asked %v, want %v", tc.mask, got, tc.ext)
		}
	}
}
