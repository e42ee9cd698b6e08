package daemon

import (
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/checks/health"
)

// TestRules_15_DegradationCountsThePortsOwnEvents: RepeatedNICDegradation
// counts a port's own non-fatal state and counter events, not monitoring
// conditions (parked files, hung reads, sanity findings, AER, saturation,
// congestion): DESIGN.md difference 15.
func TestRules_15_DegradationCountsThePortsOwnEvents(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	port := func(kind event.Kind, ek health.EntityKind, name string) health.Condition {
		return health.Condition{Check: event.InfiniBandDegradationCheck, Kind: kind, Severity: health.NonFatal, Since: at,
			Entity: health.Entity{Kind: ek, Device: "mlx5_0", Port: 1, Name: name}}
	}
	conds := []health.Condition{
		port(event.KindPortNonFatal, health.EntityPort, ""),
		port(event.KindCounterBreach, health.EntityCounter, "symbol_error"),
		port(event.KindReadParked, health.EntityFile, "/x/counters/port_rcv_errors"),
		port(event.KindReadStuck, health.EntityFile, "/x/counters/symbol_error"),
		port(event.KindLinkSanity, health.EntityFinding, "rate-below-peers"),
		port(event.KindCounterSaturated, health.EntityCounter, "saturated:symbol_error"),
		port(event.KindCongestion, health.EntityCounter, "congestion"),
	}
	fatal := port(event.KindCounterBreach, health.EntityCounter, "link_downed")
	fatal.Severity = health.Fatal
	conds = append(conds, fatal)
	got := degradedOf(conds)
	if len(got) != 2 {
		t.Fatalf("counted %+v, want the port's state and symbol_error only", got)
	}
}
