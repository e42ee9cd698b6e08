package runner

import (
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/observe"
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

// Seed 11.1 reports fatal counter breaches under the state check of their
// NIC type (DESIGN.md difference 2), so with the state checks switched
// off and the counter checks on (checks = the degradation checks), the
// first poll after a reboot still clears the state check's name, where
// the previous boot's fatal counter breaches were raised (difference 5).
func TestDesign_2_OpeningClearsCoverTheStateCheckTheCountersSpeakAs(t *testing.T) {
	cfg, err := config.Parse(filepath.Join(t.TempDir(), "config.toml"),
		[]byte("nodeName = \"t\"\nchecks = [\"InfiniBandDegradationCheck\", \"EthernetDegradationCheck\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	r := New(cfg, observe.BootRebooted, "boot", slog.New(slog.DiscardHandler), Seams{}, health.NewModel())
	t.Cleanup(r.Close)
	var cleared []string
	for _, s := range r.openingClears(nil) {
		cleared = append(cleared, s.CheckName)
	}
	for _, want := range []string{"InfiniBandStateCheck", "EthernetStateCheck", "InfiniBandDegradationCheck", "EthernetDegradationCheck"} {
		if !slices.Contains(cleared, want) {
			t.Errorf("opening clears %v lack %s", cleared, want)
		}
	}
	// Counter detection off: the state checks stay switched off, and so
	// does their clear.
	cfg.CountersEnabled = false
	cleared = cleared[:0]
	for _, s := range r.openingClears(nil) {
		cleared = append(cleared, s.CheckName)
	}
	if slices.Contains(cleared, "InfiniBandStateCheck") {
		t.Errorf("with counter detection off: %v", cleared)
	}
}
