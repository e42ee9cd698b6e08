package promlab

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// FabricPort is one switch port of a daemon's fabric share as FabricDaemon
// exports it.
type FabricPort struct {
	SwitchGUID, SwitchName string
	Port                   int
	// SymbolErrorsPerScrape is how much SymbolErrorCounter rises on each
	// scrape (0: a clean link).
	SymbolErrorsPerScrape int
	// LastReadAge is how old the port's last read is at every scrape: 0
	// for a port read just now, an hour for one whose reads stopped.
	LastReadAge time.Duration
}

// pmaFields are the PortCounters fields as perfquery prints them, the
// values of the counter label.
var pmaFields = []string{"SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter", "PortRcvErrors",
	"PortRcvRemotePhysicalErrors", "PortRcvSwitchRelayErrors", "PortXmitDiscards", "PortXmitConstraintErrors",
	"PortRcvConstraintErrors", "LocalLinkIntegrityErrors", "ExcessiveBufferOverrunErrors", "VL15Dropped",
	"PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts", "PortXmitWait"}

// FabricDaemon serves what a nichealthd reading the given share of switch
// ports exports of it (DESIGN.md section 14) and returns its address.
// valid is its nichealth_fabric_assignment_valid.
func FabricDaemon(t *testing.T, valid bool, share []FabricPort) string {
	t.Helper()
	return Exposition(t, func(scrape int) string { return fabricPage(scrape, valid, share, time.Now()) })
}

func fabricPage(scrape int, valid bool, share []FabricPort, now time.Time) string {
	var b strings.Builder
	v := 0
	if valid {
		v = 1
	}
	fmt.Fprintf(&b, "# HELP nichealth_fabric_assigned_ports Switch ports in this node's fabric share.\n"+
		"# TYPE nichealth_fabric_assigned_ports gauge\nnichealth_fabric_assigned_ports %d\n", len(share))
	fmt.Fprintf(&b, "# HELP nichealth_fabric_assignment_valid 1 while the assignment file is accepted.\n"+
		"# TYPE nichealth_fabric_assignment_valid gauge\nnichealth_fabric_assignment_valid %d\n", v)
	b.WriteString("# HELP nichealth_fabric_port_counter Last value read of a switch port's PMA counter.\n# TYPE nichealth_fabric_port_counter gauge\n")
	for _, p := range share {
		for _, f := range pmaFields {
			n := 0
			switch f {
			case "SymbolErrorCounter":
				n = scrape * p.SymbolErrorsPerScrape
			case "PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts":
				n = scrape * 1000 // traffic is no error
			}
			fmt.Fprintf(&b, "nichealth_fabric_port_counter{%s,counter=%q} %d\n", portLabels(p), f, n)
		}
	}
	b.WriteString("# HELP nichealth_fabric_port_read_errors_total Failed reads of a switch port.\n# TYPE nichealth_fabric_port_read_errors_total counter\n")
	for _, p := range share {
		fmt.Fprintf(&b, "nichealth_fabric_port_read_errors_total{%s} 0\n", portLabels(p))
	}
	b.WriteString("# HELP nichealth_fabric_port_last_read_timestamp_seconds When a switch port was last read.\n# TYPE nichealth_fabric_port_last_read_timestamp_seconds gauge\n")
	for _, p := range share {
		fmt.Fprintf(&b, "nichealth_fabric_port_last_read_timestamp_seconds{%s} %.3f\n", portLabels(p), float64(now.Add(-p.LastReadAge).UnixMilli())/1000)
	}
	return b.String()
}

// portLabels writes a port's labels, escaped as the exposition format
// wants (backslash, quote, newline).
func portLabels(p FabricPort) string {
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return fmt.Sprintf(`switch_guid="%s",switch_name="%s",port="%d"`, esc.Replace(p.SwitchGUID), esc.Replace(p.SwitchName), p.Port)
}
