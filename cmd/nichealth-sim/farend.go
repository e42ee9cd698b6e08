package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/nichealth/nichealthd/internal/iblab"
)

// The switch port make try's node is cabled to: ibsw-leaf1 port 17 of
// the lab's two-leaf fabric, where mlx5_0 port 1 (the lab's gpu-a017)
// plugs in.
const (
	farEndSwitch     = iblab.Leaf1
	farEndPort       = iblab.GPUA017Port
	farEndSwitchName = "ibsw-leaf1"
)

// farEndErrorCounters are the PMA PortCounters error fields "farend clear"
// zeroes: every field the far-end check can judge.
var farEndErrorCounters = []string{
	"SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter", "PortRcvErrors",
	"PortRcvRemotePhysicalErrors", "PortRcvSwitchRelayErrors", "PortXmitDiscards",
	"PortXmitConstraintErrors", "PortRcvConstraintErrors", "LocalLinkIntegrityErrors",
	"ExcessiveBufferOverrunErrors", "VL15Dropped", "PortXmitWait",
}

// farEndDispatch runs "farend [--lab DIR] errors COUNTER N | unlink |
// relink | clear": faults at the switch port at the far end of the try
// node's cable, through the kept fabric lab's console (ibsim's
// PerformanceSet, Unlink and ReLink).
func farEndDispatch(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("farend", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	root := fs.String("root", os.Getenv("NICHEALTH_SIM_ROOT"), "the try node's host tree (the lab is beside it)")
	labDir := fs.String("lab", "", "the fabric lab's directory (default: lab beside --root, where make try keeps it)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *labDir == "" {
		if *root == "" {
			return usageErr("farend needs --lab DIR, or --root (NICHEALTH_SIM_ROOT) of a make try node")
		}
		*labDir = filepath.Join(filepath.Dir(filepath.Clean(*root)), "lab")
	}
	if len(pos) == 0 {
		return usageErr("farend wants errors COUNTER N, unlink, relink or clear")
	}
	verb, pos := pos[0], pos[1:]
	switch {
	case verb == "errors" && len(pos) == 2:
	case (verb == "unlink" || verb == "relink" || verb == "clear") && len(pos) == 0:
	default:
		return usageErr("farend wants errors COUNTER N, unlink, relink or clear, got %q with %d argument(s)", verb, len(pos))
	}
	lab, err := iblab.Attach(*labDir)
	if err != nil {
		return fmt.Errorf("%w (make try starts the lab when ibsim-utils, opensm and infiniband-diags are installed)", err)
	}
	defer lab.Close()
	where := fmt.Sprintf("%s port %d", farEndSwitchName, farEndPort)
	switch verb {
	case "errors":
		n, err := strconv.ParseUint(pos[1], 10, 64)
		if err != nil {
			return usageErr("farend errors %s %q: want a count", pos[0], pos[1])
		}
		if err := lab.PerformanceSet(farEndSwitch, farEndPort, "PortCounters."+pos[0], n); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %s = %d\n", where, pos[0], n)
	case "unlink":
		if err := lab.Unlink(farEndSwitch, farEndPort); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: cable pulled (farend relink plugs it back)\n", where)
	case "relink":
		if err := lab.ReLink(farEndSwitch, farEndPort); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: cable plugged back\n", where)
	case "clear":
		for _, c := range farEndErrorCounters {
			if err := lab.PerformanceSet(farEndSwitch, farEndPort, "PortCounters."+c, 0); err != nil {
				return err
			}
		}
		if err := lab.ReLink(farEndSwitch, farEndPort); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: error counters zeroed, cable plugged in\n", where)
	}
	return nil
}
