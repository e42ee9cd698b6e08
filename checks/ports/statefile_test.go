package ports

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
const sectionBefore = `{"version":1,"port_states":{"mlx5_0_1":{"state":"ACTIVE","physical_state":"LinkUp","device":"mlx5_0","port":1,"link_layer":"InfiniBand"},"mlx5_1_1":{"state":"DOWN","physical_state":"Disabled","device":"mlx5_1","port":1,"link_layer":"InfiniBand","reported":"fatal"},"mlx5_4_1":{"state":"ACTIVE","physical_state":"LinkUp","device":"mlx5_4","port":1,"link_layer":"Ethernet","operstate":"down","reported":"non-fatal"}},"known_devices":["mlx5_0","mlx5_1","mlx5_4","mlx5_7"],"disappeared":["mlx5_7"],"device_addrs":{"mlx5_0":"0000:0c:00.0","mlx5_1":"0000:0d:00.0","mlx5_4":"0000:1a:00.0","mlx5_7":"0000:2b:00.0"},"claimed":["mlx5_7"],"identity":{"mlx5_0":{"role":"compute","roleReason":"IB, 400 Gb/s","gpus":"0,1"}}}`

func TestStateFile_SectionOfTheEarlierBuildLoadsAndSavesUnchanged(t *testing.T) {
	latchtest.LoadsAndSavesUnchanged(t, New(slog.Default(), nil), sectionBefore)
}

func TestStateFile_PortStatesNoCheckWroteAreDropped(t *testing.T) {
	latchtest.Drops(t, New(slog.Default(), nil),
		`{"version":1,"port_states":{"ib0":{"state":"ACTIVE"},"mlx5_0_0":{"state":"ACTIVE"},"mlx5_0_1":{"state":"ACTIVE"},"mlx5_0_2":{"device":"mlx5_1","state":"ACTIVE"}},"known_devices":["mlx5_0"]}`,
		`port_states["ib0"]: key is not <device>_<port>`, `port_states["mlx5_0_0"]: port 0 is not 1 to 255`,
		`port_states["mlx5_0_2"]: key does not match device "mlx5_1" port 2`)
}
