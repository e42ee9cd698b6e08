package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
)

// parkedSource publishes a verdict with the given parked files (paths on
// mlx5_0 port 1).
type parkedSource struct{ files []string }

func (p parkedSource) Snapshot() *health.Snapshot {
	info := health.PortInfo{Device: "mlx5_0", Port: 1, LinkLayer: "InfiniBand", Role: "Compute", State: "ACTIVE", PhysState: "LinkUp"}
	var conds []health.Condition
	for _, f := range p.files {
		conds = append(conds, health.Condition{Check: event.InfiniBandDegradationCheck, Kind: event.KindReadParked,
			Severity: health.NonFatal, Message: "parked",
			Entity: condition.Entity{Kind: condition.File, Device: "mlx5_0", Port: 1, Name: f}})
	}
	return health.Build(health.Node{Ready: true}, []health.PortInfo{info}, conds)
}
func (parkedSource) LastPoll() time.Time   { return time.Time{} }
func (parkedSource) Outbox() OutboxStats   { return OutboxStats{} }
func (parkedSource) Sinks() []SinkStats    { return nil }
func (parkedSource) Stalled() bool         { return false }
func (parkedSource) Undeliverable() string { return "" }

func TestParking_MetricsParkedFiles(t *testing.T) {
	const f = "/sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error"
	_, page, _ := scrape(t, New().Handler(parkedSource{}))
	fams := mustParse(t, page)
	if g := fams["nichealth_parked_files"]; g == nil || g.typ != "gauge" || len(g.samples) != 1 || g.samples[0].value != 0 {
		t.Fatalf("nothing parked: %+v", g)
	}
	if fams["nichealth_parked_file"] != nil && len(fams["nichealth_parked_file"].samples) != 0 {
		t.Fatal("per-file series without a parked file")
	}
	_, page, _ = scrape(t, New().Handler(parkedSource{files: []string{f}}))
	fams = mustParse(t, page)
	if g := fams["nichealth_parked_files"]; g == nil || g.samples[0].value != 1 {
		t.Fatalf("one parked: %+v", g)
	}
	if !strings.Contains(page, `nichealth_parked_file{device="mlx5_0",port="1",file="`+f+`"} 1`) {
		t.Fatalf("no per-file series:\n%s", page)
	}
}
