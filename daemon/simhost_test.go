package daemon

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/daemon/config"
	"github.com/nichealth/nichealthd/persist"
	"github.com/nichealth/nichealthd/topology/sim"
)

// simConfig is the configuration of a monitor on the simulated host h,
// with extra TOML appended (top-level keys first, then tables).
//
// Unless extra sets it, readTimeout is the longest allowed (1m): these
// tests drive the monitor with a simulated clock, and the read deadline is
// the one real-time rule inside a cycle, so on a loaded machine a plain
// file read could otherwise be declared hung and change what a test
// counts. Tests of hung reads set their own (and use a FIFO).
func simConfig(tb testing.TB, h *sim.Host, extra string) *config.Config {
	tb.Helper()
	doc := fmt.Sprintf("sysfsRoot = %q\nprocfsRoot = %q\ndevRoot = %q\nmetadataPath = %q\nnodeName = \"t\"\n",
		h.SysRoot(), h.ProcRoot(), h.DevRoot(), h.MetadataPath())
	if !strings.Contains(extra, "readTimeout") {
		doc += "readTimeout = \"1m\"\n"
	}
	doc += extra
	cfg, err := config.Parse(filepath.Join(h.Root, "config.toml"), []byte(doc))
	if err != nil {
		tb.Fatalf("config for %s: %v", h.Root, err)
	}
	return cfg
}

// simMonitor is a discovered monitor on h (closed when the test ends),
// reading it as it would a real host: no seams, so the ethtool ioctl asks
// this machine for h's netdevs (absent here: ENODEV) and no errno is
// injected.
func simMonitor(tb testing.TB, h *sim.Host, extra string) *Monitor {
	tb.Helper()
	return simMonitorWith(tb, h, extra, Seams{})
}

// simSeams are h's stand-ins for the kernel: its errno table (nichealth-sim
// fail) and its driver-statistics files (nichealth-sim phy).
func simSeams(h *sim.Host) Seams {
	return Seams{ReadFaults: sim.NewErrnoTable(h.Root), OpenStats: sim.PHYStatsOpener(h.Root)}
}

// simMonitorWith is simMonitor with seams.
func simMonitorWith(tb testing.TB, h *sim.Host, extra string, seams Seams) *Monitor {
	tb.Helper()
	m := newMonitor(simConfig(tb, h, extra), NewMemory(), persist.BootFresh, slog.New(slog.NewTextHandler(io.Discard, nil)), seams)
	if err := m.Discover(); err != nil {
		tb.Fatalf("discover %s: %v", h.Root, err)
	}
	tb.Cleanup(m.Close)
	return m
}
