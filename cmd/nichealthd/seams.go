//go:build !simulate

package main

import (
	"flag"

	"github.com/nichealth/nichealthd/daemon"
)

// seamFlags adds no flag to the production binary, and its seams are none:
// every read is the host's own (see seams_simulate.go for the test build).
func seamFlags(*flag.FlagSet) func() (daemon.Seams, error) {
	return func() (daemon.Seams, error) { return daemon.Seams{}, nil }
}
