package rules

import (
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/observe"
)

// TestRules_15_DegradationCountsThePortsOwnEvents: RepeatedNICDegradation
// counts a port's own non-fatal state and counter events, not monitoring
// conditions (parked files, hung reads, sanity findings, AER, saturation,
// congestion): DESIGN.md difference 15.
func TestRules_15_DegradationCountsThePortsOwnEvents(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	port := func(kind event.Kind, ek condition.Kind, name string) health.Condition {
		return health.Condition{Check: event.InfiniBandDegradationCheck, Kind: kind, Severity: health.NonFatal, Since: at,
			Entity: condition.Entity{Kind: ek, Device: "mlx5_0", Port: 1, Name: name}}
	}
	conds := []health.Condition{
		port(event.KindPortNonFatal, condition.Port, ""),
		port(event.KindCounterBreach, condition.Counter, "symbol_error"),
		port(event.KindReadParked, condition.File, "/x/counters/port_rcv_errors"),
		port(event.KindReadStuck, condition.File, "/x/counters/symbol_error"),
		port(event.KindLinkSanity, condition.Finding, "rate-below-peers"),
		port(event.KindCounterSaturated, condition.Counter, "saturated:symbol_error"),
		port(event.KindCongestion, condition.Counter, "congestion"),
	}
	fatal := port(event.KindCounterBreach, condition.Counter, "link_downed")
	fatal.Severity = health.Fatal
	conds = append(conds, fatal)
	m := health.NewModel()
	m.Restore(conds)
	got := NewCheck(observe.BootSame, "boot", m).degraded()
	if len(got) != 2 {
		t.Fatalf("counted %+v, want the port's state and symbol_error only", got)
	}
}
