package metrics

import (
	"net/http"
	"testing"
)

// TestMetrics_OutboxFoldedCounted: the events the outbox bound folded into
// newer ones of the same check and entity are exposed as a counter.
func TestMetrics_OutboxFoldedCounted(t *testing.T) {
	src := unhealthySource()
	src.ob.Folded = 117
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
}
