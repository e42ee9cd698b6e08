package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/nichealth/nichealthd/dbusapi"
)

// cableLine is one cable as `cables --json` prints it: the local port,
// the switch port at its other end, and the daemon's verdict (DESIGN.md
// section 15), read from the port's D-Bus properties and judged nowhere
// here.
type cableLine struct {
	Device    string   `json:"device"`
	Port      int32    `json:"port"`
	NetDev    string   `json:"netDev"`
	LinkLayer string   `json:"linkLayer"`
	PeerName  string   `json:"peerName,omitempty"`
	PeerGUID  string   `json:"peerGUID,omitempty"`
	PeerPort  uint32   `json:"peerPort,omitempty"`
	Direction string   `json:"direction"`
	Suspect   string   `json:"suspect"`
	Part      string   `json:"part,omitempty"`
	Evidence  []string `json:"evidence"`
}

func cableOf(pv dbusapi.PortView) cableLine {
	return cableLine{Device: pv.Device, Port: pv.Port, NetDev: pv.NetDev, LinkLayer: pv.LinkLayer,
		PeerName: pv.PeerName, PeerGUID: pv.PeerGUID, PeerPort: pv.PeerPort,
		Direction: pv.CableDirection, Suspect: pv.CableSuspect, Part: pv.CablePart, Evidence: nonNilStrings(pv.CableEvidence)}
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func runCables(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	ports, cf, code, ok := listPorts("cables", args, stderr)
	if !ok {
		return code
	}
	lines := make([]cableLine, 0, len(ports))
	suspect := false
	for _, pv := range ports {
		l := cableOf(pv)
		lines = append(lines, l)
		suspect = suspect || l.Suspect != ""
	}
	if cf.json {
		if err := writeJSON(stdout, lines); err != nil {
			return fail(stderr, "cables", err)
		}
	} else {
		printCables(stdout, termSafe(lines))
	}
	// As ports does: a script asks "is any cable suspect?" by the code.
	if suspect {
		return exitFailed
	}
	return exitOK
}

// printCables is one line per cable: local port, the switch port at the
// other end, direction, suspect and evidence.
func printCables(w io.Writer, lines []cableLine) {
	if len(lines) == 0 {
		fmt.Fprintln(w, "No ports are monitored (no mlx5 device found, or all excluded by nicExclusionRegex).")
		return
	}
	p := paletteFor(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LOCAL PORT\tPEER\tDIRECTION\tSUSPECT\tEVIDENCE")
	for _, l := range lines {
		local := fmt.Sprintf("%s/%d", l.Device, l.Port)
		if l.NetDev != "" {
			local += " (" + l.NetDev + ")"
		}
		peer := "-"
		if l.PeerName != "" || l.PeerGUID != "" {
			name := l.PeerName
			if name == "" {
				name = l.PeerGUID
			}
			peer = fmt.Sprintf("%s port %d", name, l.PeerPort)
		}
		suspect := orDash(l.Part)
		evidence := orDash(strings.Join(l.Evidence, "; "))
		// The colour goes on the last column only: codes would break
		// tabwriter's width arithmetic.
		if l.Suspect != "" {
			evidence = p.yellow(evidence)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", local, peer, orDash(l.Direction), suspect, evidence)
	}
	tw.Flush()
}

// cableSummary is the port's cable verdict in one line (nichealthctl
// port): "both; suspect cable; host symbol_error +4 in 2m0s; ...".
func cableSummary(pv dbusapi.PortView) string {
	parts := []string{orDash(pv.CableDirection)}
	if pv.CablePart != "" {
		parts = append(parts, "suspect "+pv.CablePart)
	}
	parts = append(parts, pv.CableEvidence...)
	return strings.Join(parts, "; ")
}
