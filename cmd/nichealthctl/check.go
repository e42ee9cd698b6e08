package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/dbusapi"
)

// checkBusTimeout bounds the D-Bus round trips of check. Nagios kills a
// plugin after 10 s by default; a wedged daemon must leave time for the
// sysfs fallback.
const checkBusTimeout = 4 * time.Second

// nagiosStatus is a Nagios/Icinga plugin state; its value is the exit code
// (seed slides: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN).
type nagiosStatus int

const (
	nagiosOK nagiosStatus = iota
	nagiosWarning
	nagiosCritical
	nagiosUnknown
)

func (s nagiosStatus) String() string {
	switch s {
	case nagiosOK:
		return "OK"
	case nagiosWarning:
		return "WARNING"
	case nagiosCritical:
		return "CRITICAL"
	}
	return "UNKNOWN"
}

func (s nagiosStatus) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func (s *nagiosStatus) UnmarshalText(b []byte) error {
	for _, v := range []nagiosStatus{nagiosOK, nagiosWarning, nagiosCritical, nagiosUnknown} {
		if v.String() == string(b) {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("unknown plugin state %q", b)
}

// severity orders states for "worst wins": a dead port outranks a port
// that could not be read, which outranks a degraded one.
func (s nagiosStatus) severity() int {
	return [...]int{0, 1, 3, 2}[s]
}

func worst(a, b nagiosStatus) nagiosStatus {
	if b.severity() > a.severity() {
		return b
	}
	return a
}

// perfDatum is one Nagios performance datum: label=value[UOM];warn;crit;min.
type perfDatum struct {
	Label string `json:"label"`
	Value string `json:"value"`
	UOM   string `json:"uom,omitempty"`
	Warn  string `json:"warn,omitempty"`
	Crit  string `json:"crit,omitempty"`
	Min   string `json:"min,omitempty"`
}

func (p perfDatum) String() string {
	return fmt.Sprintf("%s=%s%s;%s;%s;%s", p.Label, p.Value, p.UOM, p.Warn, p.Crit, p.Min)
}

// checkEntry is one monitored port in the check's output.
type checkEntry struct {
	Name    string       `json:"name"` // <device>-<netdev>, or <device>-p<port> without a netdev
	Device  string       `json:"device"`
	Port    int          `json:"port"`
	NetDev  string       `json:"netDev,omitempty"`
	Status  nagiosStatus `json:"status"`
	Reasons []string     `json:"reasons"`
	Perf    []perfDatum  `json:"perfdata,omitempty"`
	// Node says the entry is a condition no port shows (a NIC function
	// without its RDMA device, the node's compute ports): the summary
	// counts it apart, since it is not a port.
	Node bool `json:"node,omitempty"`
}

func (e *checkEntry) add(s nagiosStatus, reason string) {
	e.Status = worst(e.Status, s)
	// Two conditions in the same words (the far end's symbol_error and
	// symbol_error_fatal both say "[SymbolErrorCounter == 55]") are one
	// reason on the plugin line.
	if reason != "" && !slices.Contains(e.Reasons, reason) {
		e.Reasons = append(e.Reasons, reason)
	}
}

// checkResult is the whole answer; --json prints it.
type checkResult struct {
	Status   nagiosStatus `json:"status"`
	ExitCode int          `json:"exitCode"`
	// Source is "daemon" (its own verdict over D-Bus), "state" (judged
	// here with the memory of its state file of this boot) or "sysfs"
	// (judged here as at a first start).
	Source string `json:"source"`
	// Daemon says why the daemon's own verdict is missing ("" when it
	// answered, or with --offline and --root, which do not ask it).
	Daemon string `json:"daemon,omitempty"`
	// State is what was made of the state file, when one was to be read.
	State  *stateInfo   `json:"state,omitempty"`
	Notes  []string     `json:"notes,omitempty"`
	Output string       `json:"output"` // the plugin line as printed without --json
	Ports  []checkEntry `json:"ports"`

	// leadText opens the summary line (the daemon is down, the state file
	// is unusable); floor is the least the status may be.
	leadText string
	floor    nagiosStatus
}

// lead puts what must be read first ahead of s on the summary line.
func (r *checkResult) lead(s string) string {
	if r.leadText == "" {
		return s
	}
	return r.leadText + "; " + s
}

func entryName(device, netdev string, port int) string {
	if netdev == "" {
		return fmt.Sprintf("%s-p%d", device, port)
	}
	return device + "-" + netdev
}

// pluginText keeps a reason from breaking the plugin line: "|" starts
// perfdata and ";;" separates ports.
func pluginText(s string) string {
	s = strings.NewReplacer("|", "/", "\n", " ", "\r", " ").Replace(s)
	for strings.Contains(s, ";;") {
		s = strings.ReplaceAll(s, ";;", ";")
	}
	return s
}

// perfLabel keeps labels to characters every Nagios/Icinga parser takes
// unquoted.
func perfLabel(parts ...string) string {
	s := strings.Join(parts, "_")
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

// perfNumber prints a float the way perfdata parsers read it: never an
// exponent.
func perfNumber(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// Nagios's limits on what a plugin prints (plugin development
// guidelines): the first line is what every UI shows and NRPE before v3
// passes at most 1 KiB of it; Nagios Core keeps 8 KiB of the whole output.
const (
	firstLineMax = 1024
	outputMax    = 8192
)

// finish computes the overall state and the plugin output, as the plugin
// guidelines lay it out:
//
//	CRITICAL - 1 of 12 ports fatal, 1 degraded: mlx5_3-ibp3s0:CRITICAL - ... ;; mlx5_5-ibp5s0:WARNING - ... ;; | ports=12;;;0 ...
//	mlx5_3-ibp3s0:CRITICAL - Port mlx5_3 port 1: state DOWN, phys_state Disabled ;;
//	...
//	mlx5_0-ibp12s0:OK ;; | mlx5_0_1_link_downed=0c;;;
//	mlx5_0_1_symbol_error=0c;;; ...
//
// The first line is a summary naming the ports that are not OK, worst
// first, and fits 1 KiB; the following lines (long output) give every
// port in the slides' "DEVICE-NETDEV:STATE - reason ;;" form, the ones
// that are not OK first; performance data follows, the summary's on the
// first line and the ports' after the long output, and everything stops
// within 8 KiB with a line saying what was left out.
func (r *checkResult) finish(perf bool) {
	r.Status = r.floor
	if len(r.Ports) == 0 {
		r.Status = nagiosUnknown
		r.Output = "UNKNOWN - " + r.lead("no monitored NIC port (no mlx5 device found, or all excluded by nicExclusionRegex or classified as management)")
		r.ExitCode = int(r.Status)
		return
	}
	// Ports are counted as ports: a condition off the ports is counted
	// apart ("1 of 13 ports" for a node condition and 12 ports would
	// be a port that does not exist).
	counts, nodeCounts, ports := map[nagiosStatus]int{}, map[nagiosStatus]int{}, 0
	for _, e := range r.Ports {
		r.Status = worst(r.Status, e.Status)
		if e.Node {
			nodeCounts[e.Status]++
			continue
		}
		counts[e.Status]++
		ports++
	}
	r.ExitCode = int(r.Status)
	// Worst first, then the order of the ports (naturally sorted devices).
	order := make([]int, 0, len(r.Ports))
	for _, st := range []nagiosStatus{nagiosCritical, nagiosUnknown, nagiosWarning, nagiosOK} {
		for i, e := range r.Ports {
			if e.Status == st {
				order = append(order, i)
			}
		}
	}
	var head strings.Builder
	fmt.Fprintf(&head, "%s - %s", r.Status, r.lead(summaryOf(counts, ports)+nodeSummary(nodeCounts)))
	var summaryPerf string
	if perf {
		summaryPerf = fmt.Sprintf(" | ports=%d;;;0 fatal_ports=%d;;;0;%d degraded_ports=%d;;;0;%d unknown_ports=%d;;;0;%d",
			ports, counts[nagiosCritical], ports, counts[nagiosWarning], ports, counts[nagiosUnknown], ports)
		if n := len(r.Ports) - ports; n > 0 {
			summaryPerf += fmt.Sprintf(" node_conditions=%d;;;0", n)
		}
	}
	bad := 0
	for _, i := range order {
		if r.Ports[i].Status != nagiosOK {
			bad++
		}
	}
	if bad > 0 {
		head.WriteString(":")
		for n, i := range order[:bad] {
			item := " " + r.Ports[i].line()
			more := fmt.Sprintf(" ... and %d more below", bad-n)
			if head.Len()+len(item)+len(summaryPerf) > firstLineMax-len(more) {
				head.WriteString(more)
				break
			}
			head.WriteString(item)
		}
	}
	head.WriteString(summaryPerf)

	var b strings.Builder
	b.WriteString(head.String())
	// Long output: every port, within the whole-output budget; what does
	// not fit is counted on a last line instead of being cut mid-line.
	var perfItems []string
	if perf {
		for _, i := range order {
			for _, p := range r.Ports[i].Perf {
				perfItems = append(perfItems, p.String())
			}
		}
	}
	reserve := 0
	if len(perfItems) > 0 {
		reserve = min(len(" | ")+len(perfItems[0]), outputMax/4)
	}
	omitted := 0
	for n, i := range order {
		line := "\n" + r.Ports[i].line()
		tail := fmt.Sprintf("\n... %d more ports not shown (nichealthctl ports lists them all)", len(order)-n)
		if b.Len()+len(line)+len(tail)+reserve > outputMax {
			omitted = len(order) - n
			b.WriteString(tail)
			break
		}
		b.WriteString(line)
	}
	if len(perfItems) > 0 {
		sep := " | "
		left := 0
		for n, it := range perfItems {
			note := fmt.Sprintf(" dropped_perfdata=%d;;;0", len(perfItems)-n)
			if b.Len()+len(sep)+len(it)+len(note) > outputMax {
				left = len(perfItems) - n
				b.WriteString(note)
				break
			}
			b.WriteString(sep)
			b.WriteString(it)
			sep = "\n"
		}
		if left > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("%d performance data items left out to keep the output within Nagios's %d bytes", left, outputMax))
		}
	}
	if omitted > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d ports left out of the long output to keep it within Nagios's %d bytes", omitted, outputMax))
	}
	r.Output = b.String()
}

// line is one port in the slides' form: "DEVICE-NETDEV:STATE - reasons ;;".
func (e *checkEntry) line() string {
	s := e.Name + ":" + e.Status.String()
	if len(e.Reasons) > 0 {
		s += " - " + pluginText(strings.Join(e.Reasons, " - "))
	}
	return s + " ;;"
}

// summaryOf says how many ports are in which state, in the project's
// words: "12 of 12 ports healthy", "1 of 12 ports fatal, 2 degraded".
func summaryOf(counts map[nagiosStatus]int, total int) string {
	var parts []string
	for _, c := range []struct {
		st   nagiosStatus
		word string
	}{{nagiosCritical, "fatal"}, {nagiosWarning, "degraded"}, {nagiosUnknown, "unknown"}} {
		n := counts[c.st]
		switch {
		case n == 0:
		case len(parts) == 0:
			parts = append(parts, fmt.Sprintf("%d of %d ports %s", n, total, c.word))
		default:
			parts = append(parts, fmt.Sprintf("%d %s", n, c.word))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%d of %d ports healthy", total, total)
	}
	return strings.Join(parts, ", ")
}

// nodeSummary counts the conditions off the ports by state, after the
// ports: "; 1 node condition fatal", "; 2 node conditions: 1 fatal, 1
// degraded" ("" when there are none).
func nodeSummary(counts map[nagiosStatus]int) string {
	var parts []string
	total := 0
	for _, c := range []struct {
		st   nagiosStatus
		word string
	}{{nagiosCritical, "fatal"}, {nagiosWarning, "degraded"}, {nagiosUnknown, "unknown"}, {nagiosOK, "OK"}} {
		if n := counts[c.st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, c.word))
			total += n
		}
	}
	switch {
	case total == 0:
		return ""
	case len(parts) == 1 && total == 1:
		return "; 1 node condition " + strings.TrimPrefix(parts[0], "1 ")
	case len(parts) == 1:
		return fmt.Sprintf("; %d node conditions %s", total, strings.TrimPrefix(parts[0], fmt.Sprintf("%d ", total)))
	}
	return fmt.Sprintf("; %d node conditions: %s", total, strings.Join(parts, ", "))
}

const checkUsage = `check [--offline] [--perfdata] [--json] [--config FILE] [--state-file FILE] [--root H] [--bus-address ADDR]

A Nagios/Icinga plugin. The first line is a summary naming the ports that
are not OK (within 1 KiB), then one line per port, e.g.
  CRITICAL - 1 of 3 ports fatal: mlx5_1-ibp140s0:CRITICAL - Port mlx5_1 port 1: state DOWN, phys_state Disabled ;;
  mlx5_1-ibp140s0:CRITICAL - Port mlx5_1 port 1: state DOWN, phys_state Disabled ;;
  mlx5_0-ibp12s0:OK ;;
  mlx5_2-ibp150s0:OK ;;
all within 8 KiB, and the exit status 0 OK, 1 WARNING (degraded port,
latched non-fatal counter, link sanity finding, nichealthd not running),
2 CRITICAL (fatal port, latched fatal counter), 3 UNKNOWN (nothing could be
checked, or a bad command line).

It asks the running nichealthd over D-Bus. When the daemon does not answer
(not running, its bus unreachable, still starting), the first line says so
and the result is at least WARNING: a node whose monitor is down is not OK.
The verdict is then the one the daemon will give when it starts again: its
state file (--state-file, the path nichealthd.service passes the daemon)
and the expected NIC inventory beside it are read, never written, and the
checks run once on sysfs with that memory, so latched counter breaches,
NICs missing since the last boot and holds in progress count as they will
for the daemon. A state file from an earlier boot is cleared as the daemon
clears it (only the expected inventory survives a reboot); a missing,
unreadable or corrupt one is said on the first line, and sysfs is judged
as at a first start. Reading the state file needs the daemon's user or
root (its directory is 0750 nichealthd).

--offline skips the daemon and judges sysfs as a freshly started daemon
does (with the state file only when --state-file is given): a port
unhealthy since first sight on a card that matches its peers is
unprovisioned; with no history to hold a shortfall over, a card short of
its peers is reported at once; counters are shown in perfdata but not
judged (judging needs the daemon's history).`

// defaultStateFile is the packaged state file (nichealthd.service's
// --state-file), where a stopped daemon's memory is.
const defaultStateFile = "/var/lib/nichealthd/state.json"

func runCheck(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs, cf := newFlagSet("check", checkUsage, stderr)
	offline := fs.Bool("offline", false, "judge sysfs without asking nichealthd, even when it is running")
	perf := fs.Bool("perfdata", false, "append Nagios performance data (counters, counter rates, link rates)")
	cfgPath := fs.String("config", config.DefaultPath, "the daemon's configuration, for judging without it (a missing default file means built-in defaults)")
	stateFile := fs.String("state-file", defaultStateFile, "the daemon's state file, read (never written) when nichealthd does not answer; with --offline or --root only when given")
	root := fs.String("root", "", "judge a host directory H (H/sys, H/proc, H/dev, H/var/lib/nvsentinel), e.g. a simulated host, without asking nichealthd")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		if code == exitOK {
			return exitOK
		}
		// Nagios plugin guidelines: a bad command line is UNKNOWN, and the
		// monitoring UI shows only stdout.
		fmt.Fprintln(stdout, "UNKNOWN - invalid command line (nichealthctl check --help)")
		return int(nagiosUnknown)
	}
	if len(pos) != 0 {
		fmt.Fprintf(stdout, "UNKNOWN - nichealthctl check takes no arguments, got %q\n", strings.Join(pos, " "))
		fs.Usage()
		return int(nagiosUnknown)
	}
	stateGiven := false
	fs.Visit(func(f *flag.Flag) { stateGiven = stateGiven || f.Name == "state-file" })

	var res checkResult
	var err error
	asked := !*offline && *root == ""
	online, why := false, unanswered{}
	if asked {
		res, online, why = checkDaemon(cf.busAddress, *perf)
	}
	if !online {
		lo := localCheck{cfgPath: *cfgPath, root: *root, perf: *perf}
		if asked || stateGiven {
			lo.stateFile = *stateFile
		}
		if asked {
			lo.daemon = why.describe(*stateFile)
		}
		notes := res.Notes
		res, err = lo.run()
		res.Notes = append(notes, res.Notes...)
		if err != nil {
			res.Status, res.ExitCode, res.Ports = nagiosUnknown, int(nagiosUnknown), []checkEntry{}
			res.Output = "UNKNOWN - " + res.lead(pluginText(err.Error()))
		}
	}
	for _, n := range res.Notes {
		fmt.Fprintf(stderr, "nichealthctl check: %s\n", n)
	}
	if cf.json {
		if err := writeJSON(stdout, res); err != nil {
			fmt.Fprintf(stderr, "nichealthctl check: %v\n", err)
			return int(nagiosUnknown)
		}
	} else {
		fmt.Fprintln(stdout, res.Output)
	}
	return res.ExitCode
}

// unanswered is why the daemon's own verdict could not be had.
type unanswered struct {
	kind   unansweredKind
	detail string
}

type unansweredKind int

const (
	notOnBus       unansweredKind = iota // the bus works, nobody owns the daemon's name
	busUnreachable                       // the bus itself cannot be reached
	noAnswer                             // the daemon did not answer in time, or answered an error
	starting                             // its first poll is not complete yet
)

// checkDaemon asks a running daemon. ok is false when the check must judge
// without it; why then says what happened and the result carries a note
// saying it.
func checkDaemon(busAddress string, perf bool) (res checkResult, ok bool, why unanswered) {
	fallback := func(k unansweredKind, detail string) (checkResult, bool, unanswered) {
		return checkResult{Notes: []string{detail}}, false, unanswered{kind: k, detail: detail}
	}
	c, err := dbusapi.Dial(busAddress)
	if err != nil {
		return fallback(busUnreachable, err.Error())
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), checkBusTimeout)
	defer cancel()
	m, err := c.Manager(ctx)
	if err == nil && !m.Ready {
		return fallback(starting, "nichealthd has not completed its first poll yet")
	}
	var ports []dbusapi.PortView
	if err == nil {
		ports, err = c.Ports(ctx)
	}
	switch {
	case err == nil:
	case errors.Is(err, dbusapi.ErrDaemonNotRunning):
		return fallback(notOnBus, err.Error())
	case errors.Is(err, dbusapi.ErrBusUnreachable):
		return fallback(busUnreachable, err.Error())
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return fallback(noAnswer, fmt.Sprintf("nichealthd did not answer within %v", checkBusTimeout))
	default:
		return fallback(noAnswer, err.Error())
	}
	res = checkResult{Source: "daemon", Ports: []checkEntry{}}
	for _, pv := range ports {
		res.Ports = append(res.Ports, entryFromView(pv, perf))
	}
	res.Ports = append(res.Ports, offPortEntries(m.Conditions, ports)...)
	res.finish(perf)
	return res, true, unanswered{}
}

// offPort is the conditions no port lists among its own.
func offPort(conds []dbusapi.ConditionView, ports []dbusapi.PortView) []dbusapi.ConditionView {
	onPort := map[[2]string]bool{}
	for _, pv := range ports {
		for _, c := range pv.Conditions {
			onPort[[2]string{c.Check, c.Entity}] = true
		}
	}
	var out []dbusapi.ConditionView
	for _, c := range conds {
		if !onPort[[2]string{c.Check, c.Entity}] {
			out = append(out, c)
		}
	}
	return out
}

// offPortEntries renders the conditions no port shows (a NIC function on
// the bus without an RDMA device or gone since the last boot, the node's
// compute ports) as entries of their own, named by the PCI address or
// "node": a plugin line that lists only ports would read OK for a node
// missing a card.
func offPortEntries(conds []dbusapi.ConditionView, ports []dbusapi.PortView) []checkEntry {
	var out []checkEntry
	for _, c := range offPort(conds, ports) {
		name := strings.ReplaceAll(c.Entity, " ", "-")
		if f := strings.Fields(c.Entity); len(f) >= 2 && f[0] == "PCI" {
			name = f[1]
		}
		e := checkEntry{Name: name, Reasons: []string{}, Node: true}
		st := nagiosWarning
		if c.Fatal {
			st = nagiosCritical
		}
		e.add(st, c.Message)
		out = append(out, e)
	}
	return out
}

// entryFromView renders one port of the daemon's verdict. It judges
// nothing: the port's verdict and its conditions come from the health
// snapshot that every view reads (DESIGN.md section 9).
func entryFromView(pv dbusapi.PortView, perf bool) checkEntry {
	e := checkEntry{Name: entryName(pv.Device, pv.NetDev, int(pv.Port)), Device: pv.Device, Port: int(pv.Port),
		NetDev: pv.NetDev, Reasons: []string{}}
	switch {
	case pv.State == "" && pv.PhysState == "" && len(pv.Conditions) == 0:
		e.add(nagiosUnknown, fmt.Sprintf("Port %s port %d: state not read yet", pv.Device, pv.Port))
	case len(pv.Conditions) > 0:
		for _, c := range pv.Conditions {
			st := nagiosWarning
			if c.Fatal {
				st = nagiosCritical
			}
			e.add(st, c.Message)
		}
	case pv.Fatal:
		e.add(nagiosCritical, pv.Message)
	case !pv.Healthy:
		e.add(nagiosWarning, pv.Message)
	}
	// The part to replace, as the daemon judged it (DESIGN.md section
	// 15), explains a port that is not OK; it changes no status, and an OK
	// port's line stays "OK". An unknown part names nothing to replace:
	// the line stays the slides' own.
	if e.Status != nagiosOK && pv.CablePart != "" && pv.CableSuspect != "unknown" {
		e.add(e.Status, fmt.Sprintf("suspect %s, errors %s", pv.CablePart, pv.CableDirection))
	}
	if perf {
		e.Perf = perfOf(pv)
	}
	return e
}

func perfOf(pv dbusapi.PortView) []perfDatum {
	var out []perfDatum
	num := strconv.Itoa(int(pv.Port))
	// One datum per counter, the one worth graphing against its
	// threshold: a velocity counter's rate, a congestion counter's share
	// of the port rate lost, any other counter's raw value (the graphing
	// side derives its rate). A 12-port node then fits Nagios's 8 KiB.
	for _, c := range pv.Counters {
		if c.ThresholdType == countertable.TypeCongestion {
			// The share of the port rate lost to backpressure over the last
			// tick, warned at the congestion threshold: graphable congestion.
			out = append(out, perfDatum{Label: perfLabel(pv.Device, num, c.Name, "lost_percent"), Value: perfNumber(c.LostPercent),
				UOM: "%", Warn: perfNumber(c.Threshold), Min: "0"})
			continue
		}
		if c.Unit == "" || c.ThresholdType != countertable.TypeVelocity {
			out = append(out, perfDatum{Label: perfLabel(pv.Device, num, c.Name), Value: strconv.FormatUint(c.Value, 10), UOM: "c"})
			continue
		}
		d := perfDatum{Label: perfLabel(pv.Device, num, c.Name, "rate"), Value: perfNumber(c.Rate), Min: "0"}
		if c.Fatal {
			d.Crit = perfNumber(c.Threshold)
		} else {
			d.Warn = perfNumber(c.Threshold)
		}
		out = append(out, d)
	}
	if pv.Up && pv.RateGbps > 0 {
		out = append(out, perfDatum{Label: perfLabel(pv.Device, num, "link_gbps"), Value: perfNumber(pv.RateGbps), Min: "0"})
	}
	return out
}
