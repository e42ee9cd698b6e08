package inventory

import (
	"log/slog"
	"testing"

	"github.com/nichealth/nichealthd/checks/latch/latchtest"
)

// sectionBefore is the check's section of the state file as the build
// before checks/latch wrote it (every kind of entry the section holds,
// keys in their on-disk form). A node upgraded with a state file on disk
// comes back with the same raised conditions, neither announced again
// nor forgotten.
const sectionBefore = `{"version":1,"functions":{"0000:0c:00.0":{"check":"NICInventoryCheck","fault":"unbound","since":"2026-12-01T09:00:00Z","ports":[{"device":"mlx5_0","port":1}]},"0000:0d:00.0":{"check":"NICInventoryCheck","fault":"absent","since":"2026-12-01T09:05:00Z"}},"seen":{"0000:0c:00.0":true,"0000:0d:00.0":false},"drift":{"0000:0c:00 fw_ver":{"check":"NICInventoryCheck","fault":"fw_ver","since":"2026-12-01T09:00:00Z","card":"0000:0c:00","ports":[{"device":"mlx5_0","port":1}]}},"ports":{"shortSince":"2026-12-01T09:00:00Z","raised":true,"check":"NICInventoryCheck"}}`

func TestStateFile_SectionOfTheEarlierBuildLoadsAndSavesUnchanged(t *testing.T) {
	latchtest.LoadsAndSavesUnchanged(t, NewCheck(slog.Default(), "b"), sectionBefore)
}
