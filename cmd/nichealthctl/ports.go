package main

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/event"
)

// listPorts is what every port-listing command does first: parse its
// flags (no arguments), reach the daemon and read every port's view.
func listPorts(name string, args []string, stderr io.Writer) ([]dbusapi.PortView, *clientFlags, int, bool) {
	fs, cf := newFlagSet(name, name+" [--json]", stderr)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return nil, nil, code, false
	}
	if len(pos) != 0 {
		return nil, nil, usageError(stderr, fs, "takes no arguments"), false
	}
	c, code, ok := connect(cf, name, stderr)
	if !ok {
		return nil, nil, code, false
	}
	defer c.Close()
	ctx, cancel := callCtx()
	defer cancel()
	ports, err := c.Ports(ctx)
	if err != nil {
		return nil, nil, fail(stderr, name, err), false
	}
	return ports, cf, 0, true
}

func runPorts(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	ports, cf, code, ok := listPorts("ports", args, stderr)
	if !ok {
		return code
	}
	if cf.json {
		if err := writeJSON(stdout, ports); err != nil {
			return fail(stderr, "ports", err)
		}
	} else {
		printPorts(stdout, termSafe(ports))
	}
	for _, p := range ports {
		if !p.Healthy || p.Fatal {
			return exitFailed
		}
	}
	return exitOK
}

func printPorts(w io.Writer, ports []dbusapi.PortView) {
	if len(ports) == 0 {
		fmt.Fprintln(w, "No ports are monitored (no mlx5 device found, or all excluded by nicExclusionRegex).")
		return
	}
	p := paletteFor(w)
	// Colour codes would break tabwriter's width arithmetic: align the
	// plain text, colour the last column only.
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	var drifts []string
	fmt.Fprintln(tw, "DEVICE\tPORT\tROLE\tLINK LAYER\tSTATE\tPHYS STATE\tRATE\tGPUS\tFIRMWARE\tHEALTH")
	for _, pv := range ports {
		h := p.health(health(pv))
		if lb := latched(pv); len(lb) > 0 {
			h += " (latched: " + strings.Join(lb, ", ") + ")"
		}
		if ds := drift(pv); len(ds) > 0 {
			h += " (drift)"
			for _, d := range ds {
				if !slices.Contains(drifts, d) {
					drifts = append(drifts, d)
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", pv.Device, pv.Port, orDash(pv.Role), orDash(pv.LinkLayer),
			orDash(pv.State), orDash(pv.PhysState), orDash(pv.Rate), orDash(gpuNames(pv.GPUs)), firmware(pv), h)
	}
	tw.Flush()
	if len(drifts) > 0 {
		fmt.Fprintln(w, "\nFirmware and model drift:")
		for _, d := range drifts {
			fmt.Fprintln(w, "  "+d)
		}
	}
}

// latched is what the port holds until acknowledged, in the codes
// nichealthctl ack takes: its local latched breaches, then the far end's
// (peer:<counter>, a latched breach of the switch port; peer-saturated:
// <field>, a saturated switch counter), read from the verdict's
// conditions of the far-end check.
func latched(pv dbusapi.PortView) []string {
	out := pv.LatchedBreaches()
	for _, c := range pv.Conditions {
		if c.Check != event.FarEndCheck || (c.Kind != string(event.KindPeerBreach) && c.Kind != string(event.KindPeerSaturated)) {
			continue
		}
		if code := counterOf(c.Entity); code != "" && !slices.Contains(out, code) {
			out = append(out, code)
		}
	}
	return out
}

// firmware is the FIRMWARE column: fw_ver and the PSID (board_id).
func firmware(pv dbusapi.PortView) string {
	switch {
	case pv.FirmwareVersion == "" && pv.BoardID == "":
		return "-"
	case pv.BoardID == "":
		return pv.FirmwareVersion
	}
	return orDash(pv.FirmwareVersion) + " " + pv.BoardID
}

// drift is the port's firmware or model drift findings, which the HEALTH
// column's "degraded" alone would not explain.
func drift(pv dbusapi.PortView) []string {
	var out []string
	for _, c := range pv.Conditions {
		if c.Kind == string(event.KindDrift) {
			out = append(out, c.Message)
		}
	}
	return out
}

var gpuDetail = regexp.MustCompile(`\s*\([^)]*\)`)

// gpuNames shortens the GPUs behind a NIC to their names for the table
// ("GPU3 (0000:5d:00.0, GPU-…)" becomes "GPU3"); nichealthctl port shows
// the PCI addresses and UUIDs. A NIC with no GPU behind it shows "-".
func gpuNames(gpus string) string {
	if gpus == "no GPU affinity" {
		return ""
	}
	return gpuDetail.ReplaceAllString(gpus, "")
}
