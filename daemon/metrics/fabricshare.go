package metrics

import (
	"strconv"

	"github.com/nichealth/nichealthd/topology/fabricshare"
	"github.com/nichealth/nichealthd/topology/mad/wire"
)

// FabricSource is a Source that reads a share of the fabric's switch
// ports (DESIGN.md section 14). Fabric is called once per scrape and must
// not wait: it returns the reader's published reading (an atomic load),
// nil when no share is read.
type FabricSource interface {
	Fabric() *fabricshare.Reading
}

// fillFabric writes the share: one set of series per assigned port.
func fillFabric(e *encoder, s *snapshot) {
	none := e.labels()
	rd := s.fabric
	if rd == nil {
		e.add(mFabricAssignedPorts, none, uval(0))
		e.add(mFabricAssignmentValid, none, uval(1))
		return
	}
	e.add(mFabricAssignedPorts, none, uval(uint64(len(rd.Ports))))
	e.add(mFabricAssignmentValid, none, bval(rd.Valid))
	var portBuf [12]byte
	for _, p := range rd.Ports {
		id := e.labels("switch_guid", p.SwitchGUID, "switch_name", p.SwitchName, "port", string(strconv.AppendInt(portBuf[:0], int64(p.Port), 10)))
		e.add(mFabricPortReadErrors, id, uval(p.Errors))
		if !p.Read {
			continue
		}
		e.add(mFabricPortLastRead, id, fval(float64(p.ReadAt.UnixMicro())/1e6))
		for i, f := range wire.Fields {
			e.add(mFabricPortCounter, e.extend(id, "counter", f.Name), uval(p.Counters[i]))
		}
	}
}
