package sanity

import (
	"testing"

	"github.com/nichealth/nichealthd/checks/latch/latchtest"
)

// sectionBefore is the check's section of the state file as the build
// before checks/latch wrote it (every kind of entry the section holds,
// keys in their on-disk form). A node upgraded with a state file on disk
// comes back with the same raised conditions, neither announced again
// nor forgotten.
const sectionBefore = `{"version":1,"sanity":{"gid|mlx5_4|1":"no RoCE v2 GID","rate|mlx5_0|1":"port mlx5_0 port 1 runs at 200 Gb/s, its peers at 400 Gb/s"},"pcieHops":{"downgraded|0000:0b:00.0":{"check":"PCIeLinkCheck","message":"the bridge above mlx5_0 runs at Gen3","nics":["mlx5_0","mlx5_1"]}}}`

func TestStateFile_SectionOfTheEarlierBuildLoadsAndSavesUnchanged(t *testing.T) {
	latchtest.LoadsAndSavesUnchanged(t, NewCheck(), sectionBefore)
}
