package simtest

import (
	"os"
	"testing"

	"github.com/nichealth/nichealthd/topology/sim"
)

// Build builds shape for the test or benchmark tb and removes the tree at
// cleanup; any failure stops tb.
func Build(tb testing.TB, shape string) *sim.Host {
	tb.Helper()
	return BuildWith(tb, shape, sim.BuildOptions{})
}

// BuildWith is Build with options (no metadata, bond, foreign RDMA, ...).
func BuildWith(tb testing.TB, shape string, opts sim.BuildOptions) *sim.Host {
	tb.Helper()
	root := TempDir(tb)
	h, err := sim.BuildWith(root, shape, opts)
	if err != nil {
		tb.Fatalf("build simulated %s host: %v", shape, err)
	}
	return h
}

// TempDir is a fresh directory from sim.MkdirTemp, removed at cleanup: for
// state files, sockets or a tree built later.
func TempDir(tb testing.TB) string {
	tb.Helper()
	dir, err := sim.MkdirTemp("nichealth-sim-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			tb.Errorf("remove simulated host %s: %v", dir, err)
		}
	})
	return dir
}
