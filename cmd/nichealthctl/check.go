package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/daemon"
	"github.com/nichealth/nichealthd/daemon/config"
	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/gpumeta"
	"github.com/nichealth/nichealthd/topology/sysfs"
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
}

func (e *checkEntry) add(s nagiosStatus, reason string) {
	e.Status = worst(e.Status, s)
	if reason != "" {
		e.Reasons = append(e.Reasons, reason)
	}
}

// checkResult is the whole answer; --json prints it.
type checkResult struct {
	Status   nagiosStatus `json:"status"`
	ExitCode int          `json:"exitCode"`
	Source   string       `json:"source"` // "daemon" or "sysfs"
	Notes    []string     `json:"notes,omitempty"`
	Output   string       `json:"output"` // the plugin line as printed without --json
	Ports    []checkEntry `json:"ports"`
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

// finish computes the overall state and the plugin line.
func (r *checkResult) finish(perf bool) {
	var b strings.Builder
	if len(r.Ports) == 0 {
		r.Status = nagiosUnknown
		b.WriteString("UNKNOWN - no monitored NIC port (no mlx5 device found, or all excluded by nicExclusionRegex or classified as management)")
	}
	for i, e := range r.Ports {
		r.Status = worst(r.Status, e.Status)
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s:%s", e.Name, e.Status)
		if len(e.Reasons) > 0 {
			b.WriteString(" - ")
			b.WriteString(pluginText(strings.Join(e.Reasons, " - ")))
		}
		b.WriteString(" ;;")
	}
	if perf {
		var pd []string
		for _, e := range r.Ports {
			for _, p := range e.Perf {
				pd = append(pd, p.String())
			}
		}
		if len(pd) > 0 {
			b.WriteString(" | ")
			b.WriteString(strings.Join(pd, " "))
		}
	}
	r.Output = b.String()
	r.ExitCode = int(r.Status)
}

const checkUsage = `check [--offline] [--perfdata] [--json] [--config FILE] [--root H] [--bus-address ADDR]

A Nagios/Icinga plugin: one line with the state of every monitored port,
  mlx5_0-ibp12s0:OK ;; mlx5_1-ibp140s0:CRITICAL - Port mlx5_1 port 1: state DOWN, phys_state Disabled ;;
and the exit status 0 OK, 1 WARNING (degraded port, latched non-fatal
counter, link sanity finding), 2 CRITICAL (fatal port, latched fatal
counter), 3 UNKNOWN (nothing could be checked, or a bad command line).
Conditions that no port shows (a kernel-log condition about a NIC that
failed to probe) are one more entry, "node:".

It asks the running nichealthd over D-Bus. When the daemon is not running
(or --offline), it reads sysfs itself with the daemon's configuration:
discovery, roles, port states and link sanity; counters are then shown in
perfdata but not judged (judging needs the daemon's history).`

func runCheck(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs, cf := newFlagSet("check", checkUsage, stderr)
	offline := fs.Bool("offline", false, "read sysfs directly even when nichealthd is running")
	perf := fs.Bool("perfdata", false, "append Nagios performance data (counters, counter rates, link rates)")
	cfgPath := fs.String("config", config.DefaultPath, "configuration for the sysfs mode (a missing default file means built-in defaults)")
	root := fs.String("root", "", "sysfs mode on a host directory H (H/sys, H/proc, H/dev, H/var/lib/nvsentinel), e.g. a simulated host")
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

	var res checkResult
	var err error
	online := false
	if !*offline && *root == "" {
		res, online = checkDaemon(cf.busAddress, *perf)
	}
	if !online {
		notes := res.Notes
		res, err = checkSysfs(*cfgPath, *root, *perf)
		res.Notes = append(notes, res.Notes...)
		if err != nil {
			res = checkResult{Status: nagiosUnknown, ExitCode: int(nagiosUnknown), Source: "sysfs", Notes: res.Notes,
				Output: "UNKNOWN - " + pluginText(err.Error()), Ports: []checkEntry{}}
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

// checkDaemon asks a running daemon. ok is false when the sysfs mode must
// take over; the result then carries only a note saying why.
func checkDaemon(busAddress string, perf bool) (checkResult, bool) {
	fallback := func(why string) (checkResult, bool) {
		return checkResult{Notes: []string{why + "; checked sysfs directly"}}, false
	}
	c, err := dbusapi.Dial(busAddress)
	if err != nil {
		return fallback(err.Error())
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), checkBusTimeout)
	defer cancel()
	m, err := c.Manager(ctx)
	if err == nil && !m.Ready {
		return fallback("nichealthd has not completed its first poll yet")
	}
	var ports []dbusapi.PortView
	if err == nil {
		ports, err = c.Ports(ctx)
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return fallback(fmt.Sprintf("nichealthd did not answer within %v", checkBusTimeout))
		}
		return fallback(err.Error())
	}
	res := checkResult{Source: "daemon", Ports: []checkEntry{}}
	for _, pv := range ports {
		res.Ports = append(res.Ports, entryFromView(pv, perf))
	}
	if e, ok := nodeEntry(m.Conditions, ports); ok {
		res.Ports = append(res.Ports, e)
	}
	res.finish(perf)
	return res, true
}

// nodeEntry is the node's own line: the conditions no port shows (a
// kernel-log condition about a function that failed to probe, or naming
// no NIC), which still make the node unhealthy.
func nodeEntry(conds []dbusapi.ConditionView, ports []dbusapi.PortView) (checkEntry, bool) {
	onPort := map[[2]string]bool{}
	for _, pv := range ports {
		for _, c := range pv.Conditions {
			onPort[[2]string{c.Check, c.Entity}] = true
		}
	}
	e := checkEntry{Name: "node", Reasons: []string{}}
	for _, c := range conds {
		if onPort[[2]string{c.Check, c.Entity}] {
			continue
		}
		st := nagiosWarning
		if c.Fatal {
			st = nagiosCritical
		}
		e.add(st, c.Message)
	}
	return e, len(e.Reasons) > 0
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
	if perf {
		e.Perf = perfOf(pv)
	}
	return e
}

func perfOf(pv dbusapi.PortView) []perfDatum {
	var out []perfDatum
	num := strconv.Itoa(int(pv.Port))
	for _, c := range pv.Counters {
		out = append(out, perfDatum{Label: perfLabel(pv.Device, num, c.Name), Value: strconv.FormatUint(c.Value, 10), UOM: "c"})
		if c.Unit == "" || c.ThresholdType != counters.TypeVelocity {
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
	if r, err := sysfs.ParseRate([]byte(pv.Rate)); err == nil && pv.State == "ACTIVE" && pv.PhysState == "LinkUp" {
		out = append(out, perfDatum{Label: perfLabel(pv.Device, num, "link_gbps"), Value: perfNumber(r.Gbps), Min: "0"})
	}
	return out
}

// checkSysfs is the daemon-less check: the daemon's own checks over one
// observation (daemon.CheckOnce), rendered exactly as the daemon's verdict
// is. An error means nothing could be checked (UNKNOWN).
func checkSysfs(cfgPath, root string, perf bool) (checkResult, error) {
	res := checkResult{Source: "sysfs", Ports: []checkEntry{}}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return res, err
	}
	if root != "" {
		if st, err := os.Stat(root); err != nil || !st.IsDir() {
			return res, fmt.Errorf("--root %s is not a directory", root)
		}
		cfg.Paths = topology.Paths{SysfsRoot: filepath.Join(root, "sys"), ProcfsRoot: filepath.Join(root, "proc"),
			DevRoot: filepath.Join(root, "dev")}.WithDefaults()
		cfg.MetadataPath = filepath.Join(root, gpumeta.DefaultMetadataPath)
	}
	if !perf {
		// Counters cannot be judged from one reading; read them only for
		// perfdata.
		cfg.CountersEnabled = false
	}
	snap, note, err := daemon.CheckOnce(cfg, nil)
	if err != nil {
		return res, fmt.Errorf("cannot list the RDMA devices: %w (is nichealthd's sysfsRoot right, and is the mlx5_ib module loaded?)", err)
	}
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	for _, pv := range dbusapi.PortViewsOf(snap) {
		e := entryFromView(pv, perf)
		if pv.State == "" && pv.PhysState == "" && len(pv.Conditions) == 0 {
			e.Reasons = []string{fmt.Sprintf("Port %s port %d: cannot read state/phys_state in %s/%s/ports/%d/",
				pv.Device, pv.Port, cfg.Paths.ClassInfiniBand, pv.Device, pv.Port)}
		}
		res.Ports = append(res.Ports, e)
	}
	res.finish(perf)
	return res, nil
}
