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

// TestRules_15_FormerCheckNamesMigrate: a rule condition a state file of an
// older build holds under the rule's former check name is cleared under
// that name and raised again under the seeds' name, so no consumer keeps
// a condition nothing would clear.
func TestRules_15_FormerCheckNamesMigrate(t *testing.T) {
	m := health.NewModel()
	at := time.Unix(1_700_000_000, 0)
	raise := event.New(event.Spec{Kind: event.KindRuleRaised, CheckName: "NICLinkFlapRule", IsFatal: true, Device: "mlx5_2", Port: 1,
		Message: "Port mlx5_2 port 1: NIC port flapping detected"}, event.Stamp{Now: at})
	m.Apply(&raise)
	specs := migrateRuleChecks(m)
	if len(specs) != 2 || specs[0].Kind != event.KindCheckCleared || specs[0].CheckName != "NICLinkFlapRule" ||
		specs[1].Kind != event.KindRuleRaised || specs[1].CheckName != "RepeatedNICLinkFlap" || !specs[1].IsFatal || specs[1].Device != "mlx5_2" {
		t.Fatalf("specs %+v", specs)
	}
	for _, s := range specs {
		e := event.New(s, event.Stamp{Now: at.Add(time.Second)})
		m.Apply(&e)
	}
	if cs := m.Conditions(); len(cs) != 1 || cs[0].Check != "RepeatedNICLinkFlap" || cs[0].Severity != health.Fatal {
		t.Fatalf("conditions after the migration %+v", cs)
	}
	if again := migrateRuleChecks(m); len(again) != 0 {
		t.Fatalf("migrated twice: %+v", again)
	}
}
