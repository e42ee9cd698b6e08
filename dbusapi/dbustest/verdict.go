package dbustest

import (
	"slices"
	"strconv"
	"strings"

	"github.com/nichealth/nichealthd/dbusapi"
)

// withVerdict fills in what the daemon's health snapshot would say of
// views written field by field in a test: a Fatal port without a latched
// fatal counter is a fatal condition on the port, an unhealthy one a
// non-fatal condition, each latched counter and each sanity line a
// condition of its own. Views that already carry a Verdict are left alone.
func withVerdict(m dbusapi.ManagerView, ports []dbusapi.PortView) (dbusapi.ManagerView, []dbusapi.PortView) {
	var all []dbusapi.ConditionView
	fatal, degraded := slices.Clone(m.FatalPorts), []string{}
	for i := range ports {
		p := &ports[i]
		if p.Verdict != "" {
			all = append(all, p.Conditions...)
			continue
		}
		key := p.Device + "/" + itoa(int(p.Port))
		var cs []dbusapi.ConditionView
		fatalCounter := false
		var latched []dbusapi.ConditionView
		for _, c := range p.Counters {
			if c.Breached {
				fatalCounter = fatalCounter || c.Fatal
				// Seed 11.1: a fatal breach under the state check.
				check := "InfiniBandDegradationCheck"
				if c.Fatal {
					check = "InfiniBandStateCheck"
				}
				latched = append(latched, dbusapi.ConditionView{Check: check, Entity: key + " " + c.Name,
					Kind: "counter-breach", Fatal: c.Fatal, Message: c.Name + " latched"})
			}
		}
		linkBad := p.State == "DOWN" || p.PhysState == "Disabled" || (p.Fatal && !fatalCounter) ||
			(!p.Healthy && !p.Fatal && len(latched) == 0)
		if linkBad && p.Message != "" && !strings.Contains(p.Message, "healthy (") {
			cs = append(cs, dbusapi.ConditionView{Check: "InfiniBandStateCheck", Entity: key, Kind: "port",
				Fatal: p.State == "DOWN" || p.PhysState == "Disabled" || p.Fatal, Message: p.Message})
		}
		cs = append(cs, latched...)
		for _, s := range p.Sanity {
			cs = append(cs, dbusapi.ConditionView{Check: "InfiniBandDegradationCheck", Entity: key, Kind: "link-sanity", Message: s})
		}
		p.Conditions = cs
		p.Verdict = "healthy"
		for _, c := range cs {
			if c.Fatal {
				p.Verdict = "fatal"
			} else if p.Verdict == "healthy" {
				p.Verdict = "degraded"
			}
		}
		if len(cs) == 0 && p.Fatal {
			p.Verdict = "fatal"
		} else if len(cs) == 0 && !p.Healthy && p.State != "" {
			p.Verdict = "degraded"
		}
		p.Fatal, p.Healthy = p.Verdict == "fatal", p.Verdict == "healthy"
		switch p.Verdict {
		case "fatal":
			if !slices.Contains(fatal, key) {
				fatal = append(fatal, key)
			}
		case "degraded":
			degraded = append(degraded, key)
		}
		all = append(all, cs...)
	}
	if m.Verdict == "" {
		m.FatalPorts, m.DegradedPorts, m.Conditions = fatal, degraded, all
		m.Verdict = "healthy"
		switch {
		case len(fatal) > 0 || (!m.Healthy && len(degraded) == 0 && len(all) == 0 && m.Ready):
			m.Verdict = "fatal"
		case len(degraded) > 0:
			m.Verdict = "degraded"
		}
		m.Healthy = m.Verdict == "healthy" && m.Healthy
	}
	return m, ports
}

func itoa(n int) string { return strconv.Itoa(n) }
