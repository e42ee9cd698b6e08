package kernellog

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
const sectionBefore = `{"version":1,"bootId":"b0","seq":4711,"hasSeq":true,"active":{"mlx5_cmd_timeout|0000:0c:00.0":{"pattern":"mlx5_cmd_timeout","pci":"0000:0c:00.0","device":"mlx5_0","ports":[{"device":"mlx5_0","port":1}],"raised":true,"fatal":true,"count":3,"first":"2026-12-01T09:00:00Z","last":"2026-12-01T09:02:00Z","reported":"2026-12-01T09:02:00Z","reportedCount":3,"seq":4700,"record":"mlx5_core 0000:0c:00.0: cmd timeout"},"pcie_link_down|":{"pattern":"pcie_link_down","raised":false,"fatal":false,"count":1,"first":"2026-12-01T09:00:00Z","last":"2026-12-01T09:00:00Z","reportedCount":0,"seq":4711,"record":"x","recent":["2026-12-01T09:00:00Z"]}}}`

func TestStateFile_SectionOfTheEarlierBuildLoadsAndSavesUnchanged(t *testing.T) {
	latchtest.LoadsAndSavesUnchanged(t, NewWatch(slog.Default(), "b0", nil), sectionBefore)
}

func TestStateFile_ConditionsNoCheckWroteAreDropped(t *testing.T) {
	latchtest.Drops(t, NewWatch(slog.Default(), "b0", nil),
		`{"version":1,"active":{"a|":null,"b|":{"pattern":"c"},"d|x":{"pattern":"d","pci":"x"}}}`,
		`active["a|"]: empty`, `active["b|"]: key does not match its pattern and function`, `active["d|x"]: not a PCI address`)
}
