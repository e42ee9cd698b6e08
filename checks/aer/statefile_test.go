package aer

import (
	"testing"

	"github.com/nichealth/nichealthd/checks/latch/latchtest"
)

// sectionBefore is the check's section of the state file as the build
// before checks/latch wrote it (every kind of entry the section holds,
// keys in their on-disk form). A node upgraded with a state file on disk
// comes back with the same raised conditions, neither announced again
// nor forgotten.
const sectionBefore = `{"version":1,"functions":{"0000:0c:00.0":{"counts":[{"RxErr":3},null,{}],"totals":[3,0,0],"at":"2026-12-01T09:00:00Z","raised":{"correctable":{"check":"PCIeAERCheck","since":"2026-12-01T09:00:00Z","last":"2026-12-01T09:01:00Z"}}},"0000:0d:00.1":{"counts":[null,null,null],"totals":[0,0,0],"at":"2026-12-01T08:00:00Z"}}}`

func TestStateFile_SectionOfTheEarlierBuildLoadsAndSavesUnchanged(t *testing.T) {
	latchtest.LoadsAndSavesUnchanged(t, NewCheck(), sectionBefore)
}
