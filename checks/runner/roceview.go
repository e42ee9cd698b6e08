package runner

import (
	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/event"
)

// roceInfo is what the RoCE check says of a port, for the snapshot (nil:
// not a judged RoCE port).
func (r *Runner) roceInfo(dev string, port int) *health.RoCE {
	v, ok := r.set.roce.PortView(dev, port)
	if !ok {
		return nil
	}
	ri := &health.RoCE{Classes: v.Classes, Evidence: make([]string, len(v.Evidence)), Judged: v.Judged, Window: v.Window,
		CongestionPerSecond: v.Congestion, LossPerSecond: v.Loss, OutOfBufferPerSecond: v.OutOfBuffer, RxDiscardsPerSecond: v.RxDiscards,
		StormEvents: v.Storms, PauseLostGbps: v.PauseLostGbps, PauseLostPercent: v.PauseLostPercent, PausePriority: v.PausePriority,
		Signals: v.Read}
	for i, e := range v.Evidence {
		ri.Evidence[i] = event.Clean(e)
	}
	return ri
}
