package firmware

import (
	"testing"

	"github.com/nichealth/nichealthd/checks/latch/latchtest"
)

// sectionBefore is the check's section of the state file as the build
// before checks/latch wrote it (every kind of entry the section holds,
// keys in their on-disk form). A node upgraded with a state file on disk
// comes back with the same raised conditions, neither announced again
// nor forgotten.
const sectionBefore = `{"version":1,"functions":{"0000:0c:00.0":{"errors":{"fw_fatal":3,"tx":0},"raised":{"devlink:fw_fatal":"2026-12-01T09:00:00Z","firmware-activation-pending":"2026-12-01T09:01:00Z"}},"0000:0d:00.1":{"errors":{"fw":1}}}}`

func TestStateFile_SectionOfTheEarlierBuildLoadsAndSavesUnchanged(t *testing.T) {
	latchtest.LoadsAndSavesUnchanged(t, NewCheck(), sectionBefore)
}
