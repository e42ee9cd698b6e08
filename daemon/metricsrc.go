package daemon

import (
	"context"
	"time"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/daemon/metrics"
	"github.com/nichealth/nichealthd/mad/fabricshare"
	"github.com/nichealth/nichealthd/persist/outbox"
)

// metricsSource is the daemon as the metrics endpoint sees it: the same
// published snapshot D-Bus exports, so both always agree.
type metricsSource struct{ d *Daemon }

func (s metricsSource) Snapshot() *health.Snapshot { return s.d.Snapshot() }
func (s metricsSource) LastPoll() time.Time        { return s.d.LastPoll() }

// Outbox reads the outbox's published statistics and the daemon's held
// count, both without a lock: an append hung in the kernel holds the
// outbox's, and the endpoint must show that stall, not wait in it.
func (s metricsSource) Outbox() metrics.OutboxStats {
	st := outboxStats(s.d.ob.Stats())
	st.Held = int(s.d.heldCount.Load())
	return st
}
func (s metricsSource) Stalled() bool         { return s.d.wd != nil && s.d.wd.Stalled() }
func (s metricsSource) Undeliverable() string { return undeliverable(s.d.Snapshot()) }

func (s metricsSource) Sinks() []metrics.SinkStats {
	var out []metrics.SinkStats
	for _, dr := range s.d.sinks.Drainers() {
		out = append(out, metrics.SinkStats{Name: dr.Sink().Name(), Sent: dr.Sent(), Failed: dr.Failed()})
	}
	return out
}

// metricsServer runs the optional endpoint; a reload that changes
// metricsAddress restarts it on the new address (or stops it).
type metricsServer struct {
	addr   string
	cancel context.CancelFunc
	done   chan struct{}
}

func (d *Daemon) startMetrics(parent context.Context, addr string) {
	d.stopMetrics()
	if addr == "" {
		return
	}
	ctx, cancel := context.WithCancel(parent)
	ms := &metricsServer{addr: addr, cancel: cancel, done: make(chan struct{})}
	d.metricsSrv = ms
	h := d.metrics.Handler(metricsSource{d})
	go func() {
		defer close(ms.done)
		if err := metrics.Serve(ctx, addr, h, d.log); err != nil {
			d.log.Error("metrics endpoint unavailable; monitoring continues", "address", addr, "err", err)
		}
	}()
}

func (d *Daemon) stopMetrics() {
	if d.metricsSrv == nil {
		return
	}
	d.metricsSrv.cancel()
	<-d.metricsSrv.done
	d.metricsSrv = nil
}

// outboxStats is the outbox's statistics as the endpoint shows them.
func outboxStats(st outbox.Stats) metrics.OutboxStats {
	out := metrics.OutboxStats{LastSeq: st.LastSeq, Records: st.Records, Bytes: st.Bytes, Segments: st.Segments,
		Folded: st.Folded, Dropped: st.Dropped, Corrupt: st.Corrupt, OverBound: st.OverBound,
		Sinks: make(map[string]metrics.OutboxSink, len(st.Sinks))}
	for name, s := range st.Sinks {
		out.Sinks[name] = metrics.OutboxSink{Depth: s.Depth, Rejected: s.Rejected}
	}
	return out
}

// Fabric is the share of the fabric's switch ports this host reads: the
// reader's published reading, an atomic load.
func (s metricsSource) Fabric() *fabricshare.ShareReading { return s.d.fabricReading() }
