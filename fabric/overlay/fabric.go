package overlay

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/fabric/ibnet"
)

// The series each nichealthd exports for its share of switch ports
// (DESIGN.md section 14): one daemon of a job reads each switch port of
// the job's paths, and Prometheus holds the fabric.
const (
	// SeriesPortCounter is the last value read of one PMA counter:
	// {switch_guid, switch_name, port, counter}.
	SeriesPortCounter = "nichealth_fabric_port_counter"
	// SeriesReadErrors counts failed reads of a switch port.
	SeriesReadErrors = "nichealth_fabric_port_read_errors_total"
	// SeriesLastRead is when a switch port was last read, Unix seconds.
	SeriesLastRead = "nichealth_fabric_port_last_read_timestamp_seconds"
	// SeriesAssignedPorts is how many switch ports the daemon's share holds.
	SeriesAssignedPorts = "nichealth_fabric_assigned_ports"
	// SeriesAssignmentValid is 1 while the daemon's assignment file is
	// accepted, 0 once it refused it.
	SeriesAssignmentValid = "nichealth_fabric_assignment_valid"
)

// FabricSeries lists the series of the fabric share, for the checks that
// the shipped rules and dashboard name only series that exist.
func FabricSeries() []string {
	return []string{SeriesPortCounter, SeriesReadErrors, SeriesLastRead, SeriesAssignedPorts, SeriesAssignmentValid}
}

// LinkErrorCounters are the PMA fields whose rise marks a switch port's
// link as erroring: those that count faults of the cable and its two
// ends. PortXmitDiscards, PortRcvSwitchRelayErrors, VL15Dropped and
// PortXmitWait count the fabric's traffic (congestion, routing) rather
// than the cable, as the far-end check leaves them out by default.
var LinkErrorCounters = []string{
	"SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter", "PortRcvErrors",
	"PortRcvRemotePhysicalErrors", "PortXmitConstraintErrors", "PortRcvConstraintErrors",
	"LocalLinkIntegrityErrors", "ExcessiveBufferOverrunErrors",
}

// ErrorWindow is how far back the map looks for rising error counters.
const ErrorWindow = 15 * time.Minute

// UnreadAfter is the age of a switch port's last read past which the
// port counts as read by no node, as the shipped NICFabricPortUnread
// rule judges it.
const UnreadAfter = 600 * time.Second

// SwitchPort is one switch port as the daemons that read it reported it.
type SwitchPort struct {
	SwitchGUID ibnet.GUID `json:"switchGUID"`
	SwitchName string     `json:"switchName,omitempty"`
	Port       int        `json:"port"`
	// Readers are the daemons (Prometheus instances) that export it.
	Readers []string `json:"readers,omitempty"`
	// Verdict is Healthy when read freshly with no error counter rising,
	// Degraded when one rises (or a warning rule fires), Fatal when a
	// critical rule fires for it.
	Verdict Verdict `json:"verdict"`
	// Unread: no daemon has read it for UnreadAfter, or its reader is down.
	Unread     bool     `json:"unread,omitempty"`
	Conditions []string `json:"conditions,omitempty"`
}

type switchKey struct {
	guid ibnet.GUID
	port int
}

// Switch finds the report of a switch port, nil when no daemon reads it.
func (o *Overlay) Switch(guid ibnet.GUID, port int) *SwitchPort {
	if o == nil {
		return nil
	}
	return o.bySwitch[switchKey{guid, port}]
}

// switchPort returns the entry of a fabric series' switch port, made on
// first sight; nil for a series without a switch GUID or port number.
func (o *Overlay) switchPort(m map[string]string) *SwitchPort {
	g, err := ibnet.ParseGUID(m["switch_guid"])
	num, perr := strconv.Atoi(m["port"])
	if err != nil || perr != nil || g == 0 || num < 0 || num > 255 {
		return nil
	}
	k := switchKey{g, num}
	if p := o.bySwitch[k]; p != nil {
		return p
	}
	p := &SwitchPort{SwitchGUID: g, SwitchName: m["switch_name"], Port: num}
	o.bySwitch[k] = p
	o.Switches = append(o.Switches, p)
	return p
}

func (p *SwitchPort) reader(instance string) {
	if instance != "" && !slices.Contains(p.Readers, instance) {
		p.Readers = append(p.Readers, instance)
	}
}

func (p *SwitchPort) condition(c string) {
	if !slices.Contains(p.Conditions, c) {
		p.Conditions = append(p.Conditions, c)
	}
}

// fabricQueries are the instant queries of the fabric share, run after
// the node ports' (see Queries).
func fabricQueries() (reads, errors, unread, alerts string) {
	secs := strconv.Itoa(int(UnreadAfter.Seconds()))
	reads = "time() - " + SeriesLastRead
	errors = fmt.Sprintf(`increase(%s{counter=~"%s"}[%s]) > 0`, SeriesPortCounter, strings.Join(LinkErrorCounters, "|"), promDuration(ErrorWindow))
	// The NICFabricPortUnread rule's expression: a reader up whose last
	// read aged, or a reader down whose series vanished; not a port another
	// daemon reads freshly.
	unread = "(time() - " + SeriesLastRead + " > " + secs +
		" or time() - (last_over_time(" + SeriesLastRead + `[1h]) and on (instance) up{job="nichealthd"} == 0) > ` + secs +
		") unless on (switch_guid, port) (time() - " + SeriesLastRead + " <= " + secs + ")"
	alerts = `ALERTS{alertstate="firing",alertname=~"NICFabricLink.+",switch_guid!="",port!=""}`
	return reads, errors, unread, alerts
}

func promDuration(d time.Duration) string { return strconv.Itoa(int(d.Minutes())) + "m" }

// FabricQueries are the fabric share's queries as FromPrometheus runs
// them, for tests and documentation.
var FabricQueries = func() struct{ Reads, Errors, Unread, Alerts string } {
	r, e, u, a := fabricQueries()
	return struct{ Reads, Errors, Unread, Alerts string }{r, e, u, a}
}()

// addFabric lays the fabric share's answers over the overlay. A fleet
// whose daemons read no switch ports answers nothing and adds nothing.
func (o *Overlay) addFabric(reads, errs, unread, alerts []sample) {
	for _, s := range reads {
		p := o.switchPort(s.Metric)
		if p == nil {
			continue
		}
		p.reader(s.Metric["instance"])
		if age := s.value(); !math.IsNaN(age) && age <= UnreadAfter.Seconds() {
			p.Verdict = Worse(p.Verdict, Healthy)
		}
	}
	for _, s := range errs {
		p := o.switchPort(s.Metric)
		if p == nil {
			continue
		}
		p.reader(s.Metric["instance"])
		p.Verdict = Worse(p.Verdict, Degraded)
		p.condition(fmt.Sprintf("%s +%.0f in %s (read by %s)", s.Metric["counter"], s.value(), promDuration(ErrorWindow), s.Metric["instance"]))
	}
	for _, s := range unread {
		p := o.switchPort(s.Metric)
		if p == nil {
			continue
		}
		p.Unread = true
		p.condition(fmt.Sprintf("read by no node: last read %s ago by %s", age(s.value()), s.Metric["instance"]))
	}
	for _, s := range alerts {
		p := o.switchPort(s.Metric)
		if p == nil {
			continue
		}
		v := Degraded
		if s.Metric["severity"] == "critical" {
			v = Fatal
		}
		p.Verdict = Worse(p.Verdict, v)
		p.condition("alert " + s.Metric["alertname"] + " firing")
	}
	slices.SortFunc(o.Switches, func(a, b *SwitchPort) int {
		return cmp.Or(cmp.Compare(a.SwitchGUID, b.SwitchGUID), cmp.Compare(a.Port, b.Port))
	})
	for _, p := range o.Switches {
		slices.Sort(p.Readers)
		slices.Sort(p.Conditions)
	}
}

// age prints a number of seconds Prometheus computed as a duration; one
// past what a duration holds (a port never read: its timestamp 0) is
// printed as a number.
func age(secs float64) string {
	if math.IsNaN(secs) || secs < 0 || secs > float64(math.MaxInt64/int64(time.Second)) {
		return strconv.FormatFloat(secs, 'g', -1, 64) + "s"
	}
	return (time.Duration(secs) * time.Second).String()
}
