package runner

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/persist"
	"github.com/nichealth/nichealthd/topology/sim"
)

// simConfig is the configuration of a runner on the simulated host h,
// with extra TOML appended (top-level keys first, then tables).
//
// Unless extra sets it, readTimeout is the longest allowed (1m): these
// tests drive the runner with a simulated clock, and the read deadline is
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

// simMonitor is a discovered runner on h (closed when the test ends),
// reading it as it would a real host: no seams, so the ethtool ioctl asks
// this machine for h's netdevs (absent here: ENODEV) and no errno is
// injected.
func simMonitor(tb testing.TB, h *sim.Host, extra string) *Runner {
	tb.Helper()
	return simMonitorWith(tb, h, extra, Seams{})
}

// simSeams are h's stand-ins for the kernel: its errno table (nichealth-sim
// fail) and its driver-statistics files (nichealth-sim phy).
func simSeams(h *sim.Host) Seams {
	return Seams{ReadFaults: sim.NewErrnoTable(h.Root), OpenStats: sim.PHYStatsOpener(h.Root)}
}

// simMonitorWith is simMonitor with seams.
func simMonitorWith(tb testing.TB, h *sim.Host, extra string, seams Seams) *Runner {
	tb.Helper()
	return startRunner(tb, simConfig(tb, h, extra), nil, persist.BootFresh, slog.New(slog.NewTextHandler(io.Discard, nil)), seams)
}

// startRunner is a discovered runner with cfg over the memory of st (nil:
// none), started as a daemon started with boot.
func startRunner(tb testing.TB, cfg *config.Config, st *persist.State, boot persist.BootStatus, log *slog.Logger, seams Seams) *Runner {
	tb.Helper()
	model := health.NewModel()
	r := New(cfg, bootOf(boot), "boot", log, seams, model)
	if st != nil {
		if dropped := r.Restore(func(s string) []byte { return st.Section(s) }); len(dropped) > 0 {
			tb.Fatalf("restore: %v", dropped)
		}
	}
	r.Resume(model)
	if err := r.Discover(); err != nil {
		tb.Fatalf("discover %s: %v", cfg.Paths.SysfsRoot, err)
	}
	tb.Cleanup(r.Close)
	return r
}

// bootOf is what a daemon with this state file's boot status tells its
// checks.
func bootOf(bs persist.BootStatus) observe.Boot {
	switch bs {
	case persist.BootSame:
		return observe.BootSame
	case persist.BootRebooted:
		return observe.BootRebooted
	}
	return observe.BootFresh
}

// storeMemory writes every check's section into st, as the daemon does
// before a save.
func storeMemory(st *persist.State, r *Runner) error {
	return r.Store(func(s string, b []byte) { st.SetSection(s, b) })
}

type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *logBuf) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }
