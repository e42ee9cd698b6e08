package transceiver

import (
	"testing"

	"github.com/nichealth/nichealthd/checks/latch/latchtest"
)

// sectionBefore is the check's section of the state file as the build
// before checks/latch wrote it (every kind of entry the section holds,
// keys in their on-disk form). A node upgraded with a state file on disk
// comes back with the same raised conditions, neither announced again
// nor forgotten.
const sectionBefore = `{"version":1,"ports":{"mlx5_4_1":{"device":"mlx5_4","port":1,"raised":{"module:rx-power-low":{"fatal":false,"since":"2026-12-01T09:00:00Z"},"module:temperature-high":{"fatal":true,"since":"2026-12-01T09:05:00Z"}},"lastUp":true},"mlx5_5_1":{"device":"mlx5_5","port":1,"lastUp":false}}}`

func TestStateFile_SectionOfTheEarlierBuildLoadsAndSavesUnchanged(t *testing.T) {
	latchtest.LoadsAndSavesUnchanged(t, NewCheck(), sectionBefore)
}
