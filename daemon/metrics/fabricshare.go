package metrics

import (
	"bytes"
	"slices"
	"strconv"

	"github.com/nichealth/nichealthd/mad/fabricshare"
	"github.com/nichealth/nichealthd/mad/wire"
)

// FabricSource is a Source that reads a share of the fabric's switch
// ports (DESIGN.md section 14). Fabric is called once per scrape and must
// not wait: it returns the reader's published reading (an atomic load),
// nil when no share is read.
type FabricSource interface {
	Fabric() *fabricshare.ShareReading
}

// fillFabric writes the share's two unlabelled families; the per-port
// ones are written by writeFabric, straight from the reading.
func fillFabric(e *encoder, s *snapshot) {
	none := e.labels()
	rd := s.fabric
	if rd == nil {
		e.add(mFabricAssignedPorts, none, uval(0))
		e.add(mFabricAssignmentValid, none, uval(1))
		e.add(mFabricRefusedPorts, none, uval(0))
		return
	}
	refused := 0
	for _, p := range rd.Ports {
		if p.Refused != "" {
			refused++
		}
	}
	e.add(mFabricAssignedPorts, none, uval(uint64(len(rd.Ports))))
	e.add(mFabricAssignmentValid, none, bval(rd.Valid))
	e.add(mFabricRefusedPorts, none, uval(uint64(refused)))
}

// isFabricPortFamily: the families with one series (or 17) per assigned
// port. A share may hold 10,000 ports, 190,000 series: rendered through
// the arena they would take every label set once more per counter; they
// are written from the reading instead, each port's identity rendered
// once.
func isFabricPortFamily(i int) bool {
	return i == mFabricPortCounter || i == mFabricPortReadErrors || i == mFabricPortLastRead
}

// fabricIDs is the share's ports in the order writeFamily would write
// them: by rendered label set. Each identity is
// {switch_guid="…",switch_name="…",port="N" (no closing brace), so the
// order is the same for the families that add a counter label: two
// distinct identities are never one a prefix of the other (each ends with
// a label value's closing quote, which no value holds unescaped).
type fabricIDs struct {
	buf  []byte
	ends []uint32
	idx  []int32 // ports in order, repeated identities left out
}

func (f *fabricIDs) id(i int32) []byte {
	lo := uint32(0)
	if i > 0 {
		lo = f.ends[i-1]
	}
	return f.buf[lo:f.ends[i]]
}

func (f *fabricIDs) build(rd *fabricshare.ShareReading) {
	f.buf, f.ends, f.idx = f.buf[:0], f.ends[:0], f.idx[:0]
	if rd == nil {
		return
	}
	for i, p := range rd.Ports {
		if p.Refused != "" {
			// Not a switch port that is read: it is not exported as
			// one (nichealth_fabric_refused_ports counts it).
			f.ends = append(f.ends, uint32(len(f.buf)))
			continue
		}
		f.buf = append(f.buf, `{switch_guid="`...)
		f.buf = appendLabelValue(f.buf, p.SwitchGUID)
		f.buf = append(f.buf, `",switch_name="`...)
		f.buf = appendLabelValue(f.buf, p.SwitchName)
		f.buf = append(f.buf, `",port="`...)
		f.buf = strconv.AppendInt(f.buf, int64(p.Port), 10)
		f.buf = append(f.buf, '"')
		f.ends = append(f.ends, uint32(len(f.buf)))
		f.idx = append(f.idx, int32(i))
	}
	slices.SortStableFunc(f.idx, func(a, b int32) int { return bytes.Compare(f.id(a), f.id(b)) })
	// A repeated identity keeps its first port, as writeFamily keeps a
	// repeated label set's first sample.
	f.idx = slices.CompactFunc(f.idx, func(a, b int32) bool { return bytes.Equal(f.id(a), f.id(b)) })
}

// counterOrder is wire.Fields' indexes by name: the counter label's order.
var counterOrder = func() []int {
	o := make([]int, len(wire.Fields))
	for i := range o {
		o[i] = i
	}
	slices.SortFunc(o, func(a, b int) int { return compareStrings(wire.Fields[a].Name, wire.Fields[b].Name) })
	return o
}()

// writeFabric writes one per-port family of the share.
func (e *encoder) writeFabric(d desc, family int, rd *fabricshare.ShareReading, ids *fabricIDs) {
	if rd == nil || len(ids.idx) == 0 {
		return
	}
	header := false
	for _, i := range ids.idx {
		p := rd.Ports[i]
		if family != mFabricPortReadErrors && !p.Read {
			continue
		}
		if !header {
			e.writeHeader(d)
			header = true
		}
		id := ids.id(i)
		switch family {
		case mFabricPortReadErrors:
			e.fabricLine(d.name, id, "", uval(p.Errors))
		case mFabricPortLastRead:
			e.fabricLine(d.name, id, "", fval(float64(p.ReadAt.UnixMicro())/1e6))
		case mFabricPortCounter:
			for _, c := range counterOrder {
				e.fabricLine(d.name, id, wire.Fields[c].Name, uval(p.Counters[c]))
			}
		}
		e.spill()
	}
}

func (e *encoder) fabricLine(name string, id []byte, counterName string, v value) {
	e.out = append(e.out, name...)
	e.out = append(e.out, id...)
	if counterName != "" {
		e.out = append(e.out, `,counter="`...)
		e.out = appendLabelValue(e.out, counterName)
		e.out = append(e.out, '"')
	}
	e.out = append(e.out, '}', ' ')
	e.out = appendValue(e.out, v)
	e.out = append(e.out, '\n')
}
