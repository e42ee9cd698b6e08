package metrics

import (
	"strconv"

	"github.com/nichealth/nichealthd/checks/roce"
)

// fillRoCE writes the RoCE congestion and loss classes (DESIGN.md section
// 16) of every judged RoCE port, as the snapshot holds them: every class
// as 0 or 1, so a rule can count a rail's ports in a class, and the last
// window's rates and pause cost.
func fillRoCE(e *encoder, s *snapshot) {
	for i := range s.health.Ports {
		pv := &s.health.Ports[i]
		r := pv.RoCE
		if r == nil {
			continue
		}
		port := strconv.Itoa(pv.Port)
		id := e.labels("device", pv.Device, "port", port)
		for _, c := range roce.Classes {
			e.add(mRoCEClass, e.extend(id, "class", c), bval(r.Has(c)))
		}
		if !r.Judged {
			continue
		}
		for _, sr := range []struct {
			name string
			v    float64
		}{{"congestion", r.CongestionPerSecond}, {"loss", r.LossPerSecond}, {"out_of_buffer", r.OutOfBufferPerSecond}, {"rx_discards_phy", r.RxDiscardsPerSecond}} {
			e.add(mRoCERate, e.extend(id, "signal", sr.name), fval(sr.v))
		}
		e.add(mRoCEStormEvents, id, uval(r.StormEvents))
		if r.PausePriority >= 0 {
			pl := e.extend(id, "priority", strconv.Itoa(r.PausePriority))
			e.add(mRoCEPauseLostGbps, pl, fval(r.PauseLostGbps))
			e.add(mRoCEPauseLostPercent, pl, fval(r.PauseLostPercent))
		}
	}
}
