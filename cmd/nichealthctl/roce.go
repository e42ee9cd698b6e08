package main

import (
	"fmt"
	"strings"

	"github.com/nichealth/nichealthd/dbusapi"
)

// roceRows prints a RoCE port's congestion and loss classes (DESIGN.md
// section 16) as the daemon published them: the classes, each one's
// evidence, and the bandwidth pauses cost. roce-congested is printed
// plainly: it is congestion control working, not a fault.
func roceRows(row func(k, v string), p palette, pv dbusapi.PortView) {
	if pv.LinkLayer != "Ethernet" && pv.RoCEClass == "" {
		return
	}
	if pv.RoCEClass == "" {
		row("RoCE class", "none")
	} else {
		var cs []string
		for _, c := range strings.Split(pv.RoCEClass, ",") {
			if c == "roce-congested" {
				cs = append(cs, c+" (information: congestion control working)")
				continue
			}
			cs = append(cs, p.yellow(c))
		}
		row("RoCE class", strings.Join(cs, ", "))
		for _, e := range strings.Split(pv.RoCEEvidence, "; roce-") {
			if e != "" && !strings.HasPrefix(e, "roce-") {
				e = "roce-" + e
			}
			row("RoCE evidence", e)
		}
	}
	if pv.RoCEPauseLostGbps > 0 {
		row("Pause lost", fmt.Sprintf("%.1f Gb/s (%.1f%% of the port rate) to received pauses over the last window", pv.RoCEPauseLostGbps, pv.RoCEPauseLostPercent))
	}
}
