package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/topology"
)

func runAck(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs, cf := newFlagSet("ack", "ack DEVICE PORT [COUNTER] [--json]\n       ack PCI-ADDRESS [--json]\n\n"+
		"Declares a latched counter breach remediated (COUNTER omitted: every latched counter of the port).\n"+
		"The daemon re-baselines the counter without clearing the hardware, and emits the recovery event.\n"+
		"COUNTER pcie_aer clears the PCIe AER conditions on the port's path; kernel_log every kernel-log\n"+
		"condition on its NIC, and a kernel-log pattern's name that pattern's condition (nichealthctl status lists them);\n"+
		"peer:COUNTER (peer:symbol_error, peer:unstable) a condition of the switch port at the far end of the cable,\n"+
		"whose counters are never cleared; peer-saturated:FIELD (peer-saturated:SymbolErrorCounter) that switch\n"+
		"port's saturated field, raised again only once the field moves and saturates again.\n"+
		"With a PCI address (0000:3b:00.0): a NIC function reported gone from the PCI bus was removed on\n"+
		"purpose; the daemon forgets it and clears the condition.\n"+
		"Needs root or membership in group "+dbusapi.DefaultGroup+".", stderr)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) == 1 && topology.IsPCIAddress(pos[0]) {
		return ackFunction(cf, pos[0], stdout, stderr)
	}
	if len(pos) < 2 || len(pos) > 3 {
		return usageError(stderr, fs, "needs DEVICE PORT [COUNTER], e.g. nichealthctl ack mlx5_0 1 link_downed")
	}
	num, err := parsePortNumber(pos[1])
	if err != nil {
		return usageError(stderr, fs, "%v", err)
	}
	counter := ""
	if len(pos) == 3 {
		counter = pos[2]
	}
	c, code, ok := connect(cf, "ack", stderr)
	if !ok {
		return code
	}
	defer c.Close()
	ctx, cancel := callCtx()
	defer cancel()
	if err := c.AcknowledgeReset(ctx, pos[0], num, counter); err != nil {
		if errors.Is(err, dbusapi.ErrNotLatched) {
			// The daemon's message repeats the sentinel around its own
			// context; an operator needs one sentence and where to look.
			what := "no counter of " + pos[0] + " port " + strconv.Itoa(num) + " has"
			if counter != "" {
				what = counter + " on " + pos[0] + " port " + strconv.Itoa(num) + " has"
			}
			fmt.Fprintf(stderr, "nichealthctl ack: %s no latched breach to acknowledge (already acknowledged, or never breached; nichealthctl port %s %d shows the latches, nichealthctl status the conditions).\n", what, pos[0], num)
			return exitFailed
		}
		return fail(stderr, "ack", err)
	}
	if cf.json {
		if err := writeJSON(stdout, map[string]any{"acknowledged": true, "device": pos[0], "port": num, "counter": counter}); err != nil {
			return fail(stderr, "ack", err)
		}
		return exitOK
	}
	if counter == "" {
		fmt.Fprintf(stdout, "Acknowledged every latched breach on %s port %d.\n", pos[0], num)
	} else {
		fmt.Fprintf(stdout, "Acknowledged the latched breach of %s on %s port %d.\n", counter, pos[0], num)
	}
	return exitOK
}

// ackFunction acknowledges the removal of the NIC function at addr.
func ackFunction(cf *clientFlags, addr string, stdout, stderr io.Writer) int {
	c, code, ok := connect(cf, "ack", stderr)
	if !ok {
		return code
	}
	defer c.Close()
	ctx, cancel := callCtx()
	defer cancel()
	if err := c.AcknowledgeReset(ctx, addr, 0, ""); err != nil {
		if errors.Is(err, dbusapi.ErrNotLatched) || errors.Is(err, dbusapi.ErrInvalidArgument) {
			fmt.Fprintf(stderr, "nichealthctl ack: %v (nichealthctl status lists the conditions).\n", err)
			return exitFailed
		}
		return fail(stderr, "ack", err)
	}
	if cf.json {
		if err := writeJSON(stdout, map[string]any{"acknowledged": true, "pci": addr}); err != nil {
			return fail(stderr, "ack", err)
		}
		return exitOK
	}
	fmt.Fprintf(stdout, "Acknowledged NIC function %s: if it was removed, it is no longer expected on this node; if its card was swapped for another model, that is no longer a finding.\n", addr)
	return exitOK
}
