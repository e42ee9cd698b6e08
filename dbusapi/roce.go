package dbusapi

import (
	"strings"

	"github.com/nichealth/nichealthd/checks/health"
)

// roceView fills a port's RoCE properties from the snapshot's RoCE
// classes (nil: not a judged RoCE port, the properties stay empty).
func roceView(pv *PortView, r *health.RoCE) {
	if r == nil {
		return
	}
	pv.RoCEClass = strings.Join(r.Classes, ",")
	parts := make([]string, 0, len(r.Classes))
	for i, c := range r.Classes {
		if i < len(r.Evidence) {
			parts = append(parts, c+": "+r.Evidence[i])
		}
	}
	pv.RoCEEvidence = strings.Join(parts, "; ")
	pv.RoCEPauseLostGbps, pv.RoCEPauseLostPercent = r.PauseLostGbps, r.PauseLostPercent
}
