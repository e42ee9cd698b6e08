//go:build simulate

package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nichealth/nichealthd/daemon"
	"github.com/nichealth/nichealthd/topology/sim"
)

// The simulate build (go build -tags simulate) is nichealthd for the
// black-box tests that need the kernel to answer what a temporary
// directory cannot: errnos on chosen files (nichealth-sim fail) and mlx5
// driver statistics (nichealth-sim phy). It takes the simulated host
// explicitly, --simulate-root H, and never guesses from the tree; the
// production binary has neither the flag nor the code.
func seamFlags(fs *flag.FlagSet) func() (daemon.Seams, error) {
	root := fs.String("simulate-root", "", "test build only: the simulated host H whose errno table and driver-statistics files stand in for the kernel")
	return func() (daemon.Seams, error) {
		if *root == "" {
			return daemon.Seams{}, nil
		}
		abs, err := filepath.Abs(*root)
		if err != nil {
			return daemon.Seams{}, fmt.Errorf("--simulate-root %s: %w", *root, err)
		}
		if _, err := os.Stat(filepath.Join(abs, sim.ManifestName)); err != nil {
			return daemon.Seams{}, fmt.Errorf("--simulate-root %s: not a simulated host (build one with nichealth-sim build --root %s): %w", abs, abs, err)
		}
		return daemon.Seams{ReadFaults: sim.NewErrnoTable(abs), OpenStats: sim.PHYStatsOpener(abs), LinkStates: sim.LinkStates{Root: abs},
			Modules: sim.Modules{Root: abs}, Devlink: sim.Devlink{Root: abs}}, nil
	}
}
