package transceiver

import (
	"testing"
)

// sectionBefore is the check's section of the state file as the build
// before checks/latch wrote it (every kind of entry the section holds,
// keys in their on-disk form). A node upgraded with a state file on disk
// must come back with the same raised conditions, neither re-announced
// nor forgotten: the section loads with nothing dropped and saves again
// byte for byte.
const sectionBefore = `{"version":1,"ports":{"mlx5_4_1":{"device":"mlx5_4","port":1,"raised":{"module:rx-power-low":{"fatal":false,"since":"2026-12-01T09:00:00Z"},"module:temperature-high":{"fatal":true,"since":"2026-12-01T09:05:00Z"}},"lastUp":true},"mlx5_5_1":{"device":"mlx5_5","port":1,"lastUp":false}}}`

func TestStateFile_SectionOfTheEarlierBuildLoadsAndSavesUnchanged(t *testing.T) {
	c := NewCheck()
	if dropped := c.Restore([]byte(sectionBefore)); len(dropped) != 0 {
		t.Fatalf("dropped %q from a section the earlier build wrote", dropped)
	}
	out, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != sectionBefore {
		t.Fatalf("saved\n%s\nwant\n%s", out, sectionBefore)
	}
}
