package metrics

import (
	"net/http"
	"testing"
)

// TestMetrics_OutboxFoldedAndRejected: the events the outbox bound folded
// into newer ones of the same check and entity are exposed as a counter,
// the events held in memory because they are not durable yet as a gauge,
// the events a sink rejected and the daemon parked as a gauge per sink.
func TestMetrics_OutboxFoldedAndRejected(t *testing.T) {
	src := unhealthySource()
	src.ob.Folded = 117
	src.ob.Held = 9
	src.ob.Sinks["connector"] = OutboxSink{Depth: 4, Rejected: 3}
	code, page, _ := scrape(t, New().Handler(src))
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, page)
	}
	fams := mustParse(t, page)
	f := fams["nichealth_outbox_folded_total"]
	if f == nil {
		t.Fatalf("nichealth_outbox_folded_total missing:\n%s", page)
	}
	if got := f.value(t); got != 117 {
		t.Fatalf("nichealth_outbox_folded_total = %v, want 117", got)
	}
	if got := fams["nichealth_outbox_held_events"].value(t); got != 9 {
		t.Fatalf("nichealth_outbox_held_events = %v, want 9", got)
	}
	if got := fams["nichealth_events_rejected"].value(t, "sink", "connector"); got != 3 {
		t.Fatalf("nichealth_events_rejected{sink=connector} = %v, want 3", got)
	}
}
