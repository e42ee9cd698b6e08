package counters

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
const sectionBefore = `{"version":1,"counter_snapshots":{"mlx5_0:1:symbol_error":{"value":12,"timestamp":"2026-12-01T09:00:00Z"},"mlx5_4:1:rx_discards_phy":{"value":7,"timestamp":"2026-12-01T09:00:00Z"}},"breach_flags":{"mlx5_0:1:symbol_error":{"breached":true,"check_name":"InfiniBandErrorCheck","is_fatal":false,"since":"2026-12-01T09:00:00Z","definition":"abc123","reading":"value=12, delta=12, rate=0.20/sec"}},"saturated":{"mlx5_0:1:port_rcv_data":"2026-12-01T08:00:00Z"},"congested":{"mlx5_0:1:port_xmit_wait":"2026-12-01T08:30:00Z"},"raised_under":{"mlx5_0:1:port_rcv_data":"InfiniBandDegradationCheck","mlx5_0:1:port_xmit_wait":"InfiniBandCongestionCheck"}}`

func TestStateFile_SectionOfTheEarlierBuildLoadsAndSavesUnchanged(t *testing.T) {
	latchtest.LoadsAndSavesUnchanged(t, NewCheck(slog.Default(), false), sectionBefore)
}
