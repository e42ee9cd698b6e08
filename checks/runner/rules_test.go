package runner

import (
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/persist"
)

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
	r, _, _ := restoreMemory(t, persist.NewState(""))
	specs := r.migrateRuleChecks(m)
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
	if again := r.migrateRuleChecks(m); len(again) != 0 {
		t.Fatalf("migrated twice: %+v", again)
	}
}
