package roce

import (
	"testing"

	"github.com/nichealth/nichealthd/checks/latch/latchtest"
)

// sectionBefore is the check's section of the state file as the build
// before checks/latch wrote it (every kind of entry the section holds,
// keys in their on-disk form). A node upgraded with a state file on disk
// comes back with the same raised conditions, neither announced again
// nor forgotten.
const sectionBefore = `{"version":1,"ports":{"mlx5_11/1":{"start":"2026-12-01T10:00:00Z","have":0,"values":[5,6,7,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]},"mlx5_4/1":{"start":"2026-12-01T10:00:00Z","have":7,"values":[5,6,7,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0],"classes":{"roce-congested":{"since":"2026-12-01T09:00:00Z","evidence":"np_ecn_marked_roce_packets 2000.0/s"},"roce-lossy":{"since":"2026-12-01T09:10:00Z"}}}}}`

func TestStateFile_SectionOfTheEarlierBuildLoadsAndSavesUnchanged(t *testing.T) {
	latchtest.LoadsAndSavesUnchanged(t, NewCheck(), sectionBefore)
}
