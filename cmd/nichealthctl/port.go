package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nichealth/nichealthd/config/countertable"

	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/mad/wire"
)

func runPort(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs, cf := newFlagSet("port", "port DEVICE PORT [--json]", stderr)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 2 {
		return usageError(stderr, fs, "needs DEVICE and PORT, e.g. nichealthctl port mlx5_0 1")
	}
	num, err := parsePortNumber(pos[1])
	if err != nil {
		return usageError(stderr, fs, "%v", err)
	}
	c, code, ok := connect(cf, "port", stderr)
	if !ok {
		return code
	}
	defer c.Close()
	ctx, cancel := callCtx()
	defer cancel()
	pv, err := c.Port(ctx, pos[0], num)
	if err != nil {
		return fail(stderr, "port", err)
	}
	if cf.json {
		if err := writeJSON(stdout, pv); err != nil {
			return fail(stderr, "port", err)
		}
	} else {
		printPort(stdout, termSafe(pv), time.Now())
	}
	if !pv.Healthy || pv.Fatal {
		return exitFailed
	}
	return exitOK
}

func parsePortNumber(s string) (int, error) {
	n, err := strconv.ParseUint(s, 10, 31)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("PORT must be a port number starting at 1, not %q", s)
	}
	return int(n), nil
}

func printPort(w io.Writer, pv dbusapi.PortView, now time.Time) {
	p := paletteFor(w)
	fmt.Fprintf(w, "%s port %d: %s\n", p.bold(pv.Device), pv.Port, p.health(health(pv)))
	row := func(k, v string) { fmt.Fprintf(w, "%12s: %s\n", k, v) }
	if pv.Message != "" {
		row("Message", pv.Message)
	}
	row("State", orDash(pv.State)+" / "+orDash(pv.PhysState))
	if pv.LinkDownReason != "" {
		row("Link down", pv.LinkDownReason)
	}
	row("Link layer", orDash(pv.LinkLayer))
	row("Rate", orDash(pv.Rate))
	role := orDash(pv.Role)
	if pv.RoleReason != "" {
		role += " (" + pv.RoleReason + ")"
	}
	row("Role", role)
	row("GPUs", orDash(pv.GPUs))
	row("NetDev", orDash(pv.NetDev))
	row("PCI", orDash(pv.PCIAddress))
	if pv.NUMANode >= 0 {
		row("NUMA node", strconv.Itoa(int(pv.NUMANode)))
	} else {
		row("NUMA node", "unknown")
	}
	change := "none seen"
	if pv.LastChangeUSec != 0 {
		change = stamp(pv.LastChangeUSec) + " (" + age(pv.LastChangeUSec, now) + ")"
	}
	row("Last change", change)
	if len(pv.Sanity) == 0 {
		row("Link sanity", "ok")
	} else {
		row("Link sanity", p.yellow(strings.Join(pv.Sanity, "; ")))
	}
	switch {
	case pv.PeerGUID != "":
		row("Far end", fmt.Sprintf("%s port %d (node GUID %s)", pv.PeerName, pv.PeerPort, pv.PeerGUID)+farAge(p, pv, now))
		row("Far counters", farCounters(pv))
	case pv.PeerReadError != "":
		row("Far end", p.yellow(fmt.Sprintf("not found, %s", failedReads(pv.PeerReadErrors))))
	}
	if pv.PeerReadError != "" {
		row("Far error", pv.PeerReadError)
	}
	roceRows(row, p, pv)
	if pv.CableDirection != "" {
		row("Cable", cableSummary(pv))
	}
	if lb := pv.LatchedBreaches(); len(lb) > 0 {
		row("Latched", p.red(strings.Join(lb, ", "))+fmt.Sprintf("  (after remediation: nichealthctl ack %s %d)", pv.Device, pv.Port))
	}
	if len(pv.Counters) == 0 {
		fmt.Fprintln(w, "\nNo counters are monitored on this port.")
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "COUNTER\tVALUE\tRATE\tTHRESHOLD\tSTATUS")
	for _, c := range pv.Counters {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", c.Name, c.Value, counterRate(c), threshold(c), counterStatus(p, c))
	}
	tw.Flush()
}

func counterRate(c dbusapi.CounterView) string {
	if c.Unit == "" {
		return "-"
	}
	if c.Unit == countertable.TypeBER {
		return "BER " + counters.FormatBER(c.Rate) // a bit error rate has no time unit
	}
	return strconv.FormatFloat(c.Rate, 'g', 4, 64) + "/" + c.Unit
}

func threshold(c dbusapi.CounterView) string {
	t := strconv.FormatFloat(c.Threshold, 'f', -1, 64)
	if c.ThresholdType == countertable.TypeBER {
		t = strconv.FormatFloat(c.Threshold, 'g', -1, 64)
	}
	s := orDash(c.ThresholdType) + " > " + t
	if c.ThresholdType == "velocity" && c.Unit != "" {
		s += "/" + c.Unit
	}
	if c.ThresholdType == countertable.TypeCongestion {
		s += "% of the port rate lost"
	}
	if c.Fatal {
		s += " (fatal)"
	}
	return s
}

func counterStatus(p palette, c dbusapi.CounterView) string {
	var parts []string
	if c.Breached {
		word := "BREACHED"
		if c.BreachedSinceUSec != 0 {
			word += " since " + stamp(c.BreachedSinceUSec)
		}
		if c.Fatal {
			parts = append(parts, p.red(word))
		} else {
			parts = append(parts, p.yellow(word))
		}
	} else {
		parts = append(parts, "ok")
	}
	if c.Saturated {
		parts = append(parts, "saturated")
	}
	if c.LostGbps > 0 || c.LostPercent > 0 {
		parts = append(parts, fmt.Sprintf("lost %.2f Gb/s (%.1f%%)", c.LostGbps, c.LostPercent))
	}
	return strings.Join(parts, ", ")
}

// farAge says how old the far end's counters are. A far end that stopped
// answering keeps its last peer and counters (the daemon's snapshot keeps
// them, as /metrics keeps its series): the line says they are stale, since
// when, and how many reads failed, so this view and /metrics agree.
func farAge(p palette, pv dbusapi.PortView, now time.Time) string {
	if pv.PeerReadError == "" {
		if pv.PeerReadUSec == 0 {
			return ""
		}
		return ", read " + age(pv.PeerReadUSec, now)
	}
	last := "never read"
	if pv.PeerReadUSec != 0 {
		last = "last read " + age(pv.PeerReadUSec, now)
	}
	return p.yellow(", stale: " + last + ", " + failedReads(pv.PeerReadErrors))
}

func failedReads(n uint64) string {
	if n == 1 {
		return "1 failed read"
	}
	return fmt.Sprintf("%d failed reads", n)
}

// farCounters names the far end's error counters that are not zero, in
// wire order, as the slides' check names them ("SymbolErrorCounter=55").
func farCounters(pv dbusapi.PortView) string {
	if len(pv.PeerCounters) == 0 {
		return "not read yet"
	}
	var parts []string
	for _, f := range wire.Fields {
		if v := pv.PeerCounters[f.Name]; v != 0 && f.Bits < 32 || f.Name == "PortXmitWait" && v != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", f.Name, v))
		}
	}
	if len(parts) == 0 {
		return "no errors counted"
	}
	return strings.Join(parts, ", ")
}
