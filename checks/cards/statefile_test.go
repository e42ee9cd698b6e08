package cards

import (
	"testing"

	"github.com/nichealth/nichealthd/checks/latch/latchtest"
)

// sectionBefore is the check's section of the state file as the build
// before checks/latch wrote it (every kind of entry the section holds,
// keys in their on-disk form). A node upgraded with a state file on disk
// comes back with the same raised conditions, neither announced again
// nor forgotten.
const sectionBefore = `{"version":1,"card_anomalies":{"0000:0c:00":{"role":"compute","active":1,"expected":2,"since":"2026-12-01T09:00:00Z","check":"InfiniBandPortCheck","ports":[{"device":"mlx5_0","port":1},{"device":"mlx5_1","port":1}]},"0000:1a:00":{"role":"storage","active":0,"expected":1,"since":"2026-12-01T09:10:00Z"}},"short_since":{"0000:0c:00":"2026-12-01T08:59:00Z"},"no_subnet_manager":{"compute":{"since":"2026-12-01T08:00:00Z","raised":true,"check":"InfiniBandPortCheck","ports":[{"device":"mlx5_0","port":1}]},"storage":{"since":"2026-12-01T08:30:00Z"}}}`

func TestStateFile_SectionOfTheEarlierBuildLoadsAndSavesUnchanged(t *testing.T) {
	latchtest.LoadsAndSavesUnchanged(t, NewCheck(nil), sectionBefore)
}

func TestStateFile_CardEntriesNoCheckWroteAreDropped(t *testing.T) {
	latchtest.Drops(t, NewCheck(nil),
		`{"version":1,"card_anomalies":{"":{"role":"compute"},"0000:0c:00":{"role":"compute","active":-1}},"short_since":{"0000:0c:00":"0001-01-01T00:00:00Z"},"no_subnet_manager":{"compute":{"since":"0001-01-01T00:00:00Z"}}}`,
		`card_anomalies[""]: empty or unprintable key`, `card_anomalies["0000:0c:00"]: negative port count`,
		`no_subnet_manager["compute"]: empty key, no time or a bad port`, `short_since["0000:0c:00"]: empty key or no time`)
}
