package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/nichealth/nichealthd/internal/flagdoc"
	"github.com/nichealth/nichealthd/topology/module"
)

const moduleUsage = `Usage: nichealthctl module SUBCOMMAND [OPTIONS]

Offline commands for transceivers (optics and cables); none needs a running
nichealthd.

Subcommands:
  decode FILE|-     decode a module dump saved with "ethtool -m DEV raw on"
                    (or its hex form, "ethtool -m DEV hex on") the way the
                    daemon judges it: identity, temperature, voltage, per-lane
                    bias and optical power, latched flags, the module's own
                    thresholds and every reading past them

nichealthctl module SUBCOMMAND --help shows its options.

Exit status: 0 decoded and no reading past the module's thresholds, 1 a
reading past them, thresholds the module cannot mean (ignored, as the
daemon ignores them), or the file could not be read or decoded, 2 usage
error.
`

func runModule(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "nichealthctl module: missing subcommand (decode)")
		io.WriteString(stderr, moduleUsage)
		return exitUsage
	}
	switch args[0] {
	case "decode":
		return moduleDecode(args[1:], stdin, stdout, stderr)
	case "-h", "--help", "-help", "help":
		io.WriteString(stdout, moduleUsage)
		return exitOK
	}
	fmt.Fprintf(stderr, "nichealthctl module: unknown subcommand %q (decode)\n", args[0])
	return exitUsage
}

// moduleDecoded is what --json prints.
type moduleDecoded struct {
	Module     module.Module      `json:"module"`
	Excursions []module.Excursion `json:"excursions"`
	Findings   []string           `json:"findings"`
}

func moduleDecode(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("module decode", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "machine-readable JSON output")
	portDown := fs.Bool("port-down", false, "the module's port was not up: lanes carry nothing, so their low readings are not judged")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: nichealthctl module decode [--json] [--port-down] FILE|-\n\n"+
			"Decodes a module dump (raw bytes from \"ethtool -m DEV raw on > FILE\", or the hex\n"+
			"form) as SFF-8636 (QSFP28 and older), CMIS (QSFP-DD, OSFP, QSFP112) or SFF-8472\n"+
			"(SFP, SFP28). In the hex form, a line naming a page (\"page 3\", \"Upper Page 11h\",\n"+
			"\"Bank 1 Page 11h\") puts the 0x80-0xff lines after it on that page, and \"A2h\" puts\n"+
			"the lines after it at an SFP's diagnostics address (as \"sfputil show\n"+
			"eeprom-hexdump\" prints them), so the outputs of \"ethtool -m DEV page N hex on\"\n"+
			"can be pasted one after the other. An offset given twice is refused: it means\n"+
			"a section whose header was not recognised.\n\nOptions:\n")
		flagdoc.PrintOptions(stderr, fs)
	}
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return usageError(stderr, fs, "takes one FILE (or - for stdin), got %d arguments", len(pos))
	}
	name, in := "stdin", stdin
	if pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			fmt.Fprintf(stderr, "nichealthctl module decode: %v\n", err)
			return exitFailed
		}
		defer f.Close()
		name, in = pos[0], f
	}
	b, err := io.ReadAll(io.LimitReader(in, module.MaxDump+1))
	if err != nil {
		fmt.Fprintf(stderr, "nichealthctl module decode: read %s: %v\n", name, err)
		return exitFailed
	}
	mem, err := module.ParseDump(b)
	if err != nil {
		fmt.Fprintf(stderr, "nichealthctl module decode: %s: %v\n", name, err)
		return exitFailed
	}
	m := module.Decode(mem)
	inUse := func(module.Lane) bool { return !*portDown }
	out := moduleDecoded{Module: m, Excursions: module.Excursions(m, inUse), Findings: []string{}}
	if out.Excursions == nil {
		out.Excursions = []module.Excursion{}
	}
	for _, why := range m.Implausible {
		out.Findings = append(out.Findings, "thresholds implausible, ignored: "+why)
	}
	for _, e := range out.Excursions {
		out.Findings = append(out.Findings, e.String())
	}
	if !*portDown {
		out.Findings = append(out.Findings, laneLosses(m)...)
	}
	if *asJSON {
		if err := writeJSON(stdout, out); err != nil {
			fmt.Fprintf(stderr, "nichealthctl module decode: %v\n", err)
			return exitFailed
		}
	} else {
		printModule(stdout, termSafe(out))
	}
	if len(out.Excursions) > 0 || len(m.Implausible) > 0 {
		return exitFailed
	}
	return exitOK
}

// laneLosses says which lanes latched a loss of signal or lock or a
// transmitter fault: on an up port each is a fault, on a down port the
// expected state.
func laneLosses(m module.Module) []string {
	var out []string
	for _, l := range m.Lanes {
		if l.Unused() {
			continue
		}
		var what []string
		for _, f := range []struct {
			on   bool
			name string
		}{{l.RxLOS, "Rx loss of signal"}, {l.RxLOL, "Rx loss of lock"}, {l.TxLOS, "Tx loss of signal"}, {l.TxLOL, "Tx loss of lock"}, {l.TxFault, "Tx fault"}} {
			if f.on {
				what = append(what, f.name)
			}
		}
		if len(what) > 0 {
			out = append(out, fmt.Sprintf("lane %d latched %s", l.Lane, strings.Join(what, ", ")))
		}
	}
	return out
}

func printModule(w io.Writer, d moduleDecoded) {
	m := d.Module
	fmt.Fprintf(w, "Module:       %s (%s)\n", m.Type, m.SpecName)
	fmt.Fprintf(w, "Vendor:       %s\n", orDash(m.Vendor))
	fmt.Fprintf(w, "Part number:  %s  revision %s\n", orDash(m.PartNumber), orDash(m.Revision))
	fmt.Fprintf(w, "Serial:       %s  date code %s\n", orDash(m.Serial), orDash(m.DateCode))
	if m.State != "" {
		fmt.Fprintf(w, "State:        %s\n", m.State)
	}
	if m.Media != "" {
		fmt.Fprintf(w, "Media:        %s\n", m.Media)
	}
	if m.Flat {
		fmt.Fprintln(w, "Memory:       flat (no pages: passive copper or a module without diagnostics)")
	}
	th := m.Thresholds
	fmt.Fprintf(w, "Temperature:  %s%s\n", reading(module.Temperature, m.TemperatureC), limitsText(module.Temperature, th.TemperatureC))
	fmt.Fprintf(w, "Voltage:      %s%s\n", reading(module.Voltage, m.VoltageV), limitsText(module.Voltage, th.VoltageV))
	if len(m.Lanes) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "LANE\tTX BIAS\tTX POWER\tRX POWER\tFLAGS")
		for _, l := range m.Lanes {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", l.Lane, reading(module.TxBias, l.TxBiasMA), reading(module.TxPower, l.TxPowerM),
				reading(module.RxPower, l.RxPowerM), laneFlags(l))
		}
		tw.Flush()
		fmt.Fprintf(w, "Thresholds:   Tx bias%s\n", limitsText(module.TxBias, th.TxBiasMA))
		fmt.Fprintf(w, "              Tx power%s\n", limitsText(module.TxPower, th.TxPowerMW))
		fmt.Fprintf(w, "              Rx power%s\n", limitsText(module.RxPower, th.RxPowerMW))
	}
	for _, s := range m.Missing {
		fmt.Fprintf(w, "Not decoded:  %s\n", s)
	}
	fmt.Fprintln(w)
	if len(d.Findings) == 0 {
		fmt.Fprintln(w, "Every reading is within the module's own thresholds.")
	}
	for _, f := range d.Findings {
		fmt.Fprintf(w, "- %s\n", f)
	}
}

func reading(q module.Quantity, v *float64) string {
	if v == nil {
		return "-"
	}
	return q.Format(*v)
}

func limitsText(q module.Quantity, l *module.Limits) string {
	if l == nil {
		return "  (no thresholds)"
	}
	return fmt.Sprintf("  (warning %s to %s, alarm %s to %s)", q.Format(l.LowWarning), q.Format(l.HighWarning), q.Format(l.LowAlarm), q.Format(l.HighAlarm))
}

func laneFlags(l module.Lane) string {
	var f []string
	add := func(on bool, s string) {
		if on {
			f = append(f, s)
		}
	}
	add(l.Disabled, "disabled")
	add(l.Unsupported, "unsupported")
	add(l.Deactivated, "deactivated")
	add(l.RxLOS, "RxLOS")
	add(l.RxLOL, "RxLOL")
	add(l.TxLOS, "TxLOS")
	add(l.TxLOL, "TxLOL")
	add(l.TxFault, "TxFault")
	for _, q := range []struct {
		f    module.LevelFlag
		name string
	}{{l.TxBiasFlags, "bias"}, {l.TxPowerFlags, "Tx"}, {l.RxPowerFlags, "Rx"}} {
		add(q.f.HighAlarm, q.name+"-high-alarm")
		add(q.f.LowAlarm, q.name+"-low-alarm")
		add(q.f.HighWarning, q.name+"-high-warning")
		add(q.f.LowWarning, q.name+"-low-warning")
	}
	if len(f) == 0 {
		return "-"
	}
	return strings.Join(f, " ")
}
