package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/nichealth/nichealthd/internal/iblab"
	"github.com/nichealth/nichealthd/topology/sim"
)

// tryLabDir is where make try keeps its fabric lab, beside the host tree:
// nichealth-sim farend finds it there from $NICHEALTH_SIM_ROOT.
const tryLabDir = "lab"

// tryFarEnd reads the far end every 5 s: a fault injected by hand shows
// within seconds, and 500 symbol errors are 100/s, over symbol_error's
// 10/s however the reads fall.
const tryFarEnd = "[farEnd]\ninterval = \"5s\"\ntimeout = \"2s\"\n"

// startTryFabric cables the try node's mlx5_0 into a kept fabric lab and
// records the lab's processes in the pid file (make try-stop ends them
// after the daemon). Without the lab's programs it returns why, and the
// node runs with the far end off.
func startTryFabric(h *sim.Host, bin, dir string) (*iblab.Lab, string, string) {
	lab, farEnd, why := startFabric(h, bin, dir, filepath.Join(dir, tryLabDir), tryFarEnd)
	if lab == nil {
		return nil, "", why
	}
	ps, err := lab.Detach()
	if err != nil {
		lab.Close()
		return nil, "", err.Error()
	}
	procs := make([]tryProc, 0, len(ps))
	for _, p := range ps {
		procs = append(procs, tryProc{pid: p.PID, name: p.Name})
	}
	if err := recordProcs(dir, procs...); err != nil {
		for _, p := range procs {
			_ = p.signal()
		}
		return nil, "", err.Error()
	}
	return lab, farEnd, ""
}

// printFabric says how to try the far end, or once what to install for it.
func printFabric(w io.Writer, on bool, why, metricsAddr string) {
	if !on {
		fmt.Fprintf(w, "\nFar end: off (the switch port at the other end of each cable is not read): %s.\n", strings.TrimSpace(why))
		return
	}
	fmt.Fprintf(w, `
Far end: mlx5_0 port 1 is cabled to ibsw-leaf1 port 17 of a simulated InfiniBand fabric (ibsim
under opensm); nichealthd reads that switch port every 5s. Break it and watch:
  nichealth-sim farend errors SymbolErrorCounter 500   the switch counts symbol errors from our cable
  nichealthctl port mlx5_0 1                           its "Far end" line: the switch, its port, the breach
  sudo nichealthctl ack mlx5_0 1 peer:symbol_error     acknowledge it (the switch's counter is not cleared)
  nichealth-sim farend unlink                          pull the cable at the switch (relink: plug it back)
  nichealth-sim farend clear                           zero the switch port's counters and plug the cable back
  curl -s %s/metrics | grep nichealth_peer_port_counter
`, metricsAddr)
}

// signal asks a recorded process to end (SIGTERM).
func (p tryProc) signal() error {
	if !p.running() {
		return nil
	}
	return syscall.Kill(p.pid, syscall.SIGTERM)
}
