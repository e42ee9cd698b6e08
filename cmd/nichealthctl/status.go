package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/dbusapi"
)

// statusJSON is status --json: the manager properties plus the port
// verdict counts that the human output shows, and each port's identity
// and verdict, so a dump of it is enough for a fleet view without
// Prometheus (nichealth-fabric map --status) to place the node's ports on
// the fabric by GUID.
type statusJSON struct {
	dbusapi.ManagerView
	FatalPortCount    int          `json:"fatalPortCount"`
	DegradedPortCount int          `json:"degradedPortCount"`
	Ports             []statusPort `json:"ports"`
}

// statusPort is one port in status --json: who it is and its verdict.
type statusPort struct {
	Device     string                  `json:"device"`
	Port       int32                   `json:"port"`
	LinkLayer  string                  `json:"linkLayer"`
	NodeGUID   string                  `json:"nodeGUID"`
	PortGUID   string                  `json:"portGUID"`
	State      string                  `json:"state"`
	PhysState  string                  `json:"physState"`
	Rate       string                  `json:"rate"`
	Verdict    string                  `json:"verdict"`
	Message    string                  `json:"message"`
	Conditions []dbusapi.ConditionView `json:"conditions"`
	// CableDirection and CableSuspect are the port's cable verdict, which
	// nichealth-fabric map --status draws on the HCA's link.
	CableDirection string `json:"cableDirection,omitempty"`
	CableSuspect   string `json:"cableSuspect,omitempty"`
}

func runStatus(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs, cf := newFlagSet("status", "status [--json]", stderr)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		return usageError(stderr, fs, "takes no arguments")
	}
	c, code, ok := connect(cf, "status", stderr)
	if !ok {
		return code
	}
	defer c.Close()
	ctx, cancel := callCtx()
	defer cancel()
	m, err := c.Manager(ctx)
	if err != nil {
		return fail(stderr, "status", err)
	}
	st := statusJSON{ManagerView: m, FatalPortCount: len(m.FatalPorts), DegradedPortCount: len(m.DegradedPorts)}
	good := m.Healthy && m.Ready
	if cf.json {
		ports, err := c.Ports(ctx)
		if err != nil {
			return fail(stderr, "status", err)
		}
		st.Ports = make([]statusPort, 0, len(ports))
		for _, p := range ports {
			st.Ports = append(st.Ports, statusPort{Device: p.Device, Port: p.Port, LinkLayer: p.LinkLayer,
				NodeGUID: p.NodeGUID, PortGUID: p.PortGUID, State: p.State, PhysState: p.PhysState, Rate: p.Rate,
				Verdict: p.Verdict, Message: p.Message, Conditions: p.Conditions, CableDirection: p.CableDirection, CableSuspect: p.CableSuspect})
		}
		if err := writeJSON(stdout, st); err != nil {
			return fail(stderr, "status", err)
		}
	} else {
		printStatus(stdout, termSafe(st), time.Now())
	}
	if !good {
		return exitFailed
	}
	return exitOK
}

func printStatus(w io.Writer, st statusJSON, now time.Time) {
	p := paletteFor(w)
	m := st.ManagerView
	verdict, dot := p.green("healthy"), p.green("●")
	switch {
	case !m.Ready:
		verdict, dot = p.yellow("starting (first poll not complete)"), p.yellow("●")
	case m.Verdict == wordDegraded:
		verdict, dot = p.yellow(wordDegraded), p.yellow("●")
		if len(m.DegradedPorts) > 0 {
			verdict += " - degraded ports: " + strings.Join(m.DegradedPorts, ", ")
		}
	case !m.Healthy:
		verdict, dot = p.red(wordFatal), p.red("●")
		if len(m.FatalPorts) > 0 {
			verdict += " - fatal ports: " + strings.Join(m.FatalPorts, ", ")
		}
		if len(m.DegradedPorts) > 0 {
			verdict += "; degraded ports: " + strings.Join(m.DegradedPorts, ", ")
		}
	}
	fmt.Fprintf(w, "%s nichealthd on %s: %s\n", dot, p.bold(orDash(m.NodeName)), verdict)
	row := func(k, v string) { fmt.Fprintf(w, "%13s: %s\n", k, v) }
	row("Version", orDash(m.Version))
	row("Boot ID", orDash(m.BootID))
	row("Ports", fmt.Sprintf("%d monitored on %d NICs; %d fatal, %d degraded", m.MonitoredPorts, m.MonitoredNICs, st.FatalPortCount, st.DegradedPortCount))
	row("Config", fmt.Sprintf("%s (generation %d)", orDash(m.ConfigPath), m.ConfigGeneration))
	if m.LastReloadError != "" {
		row("Last reload", p.red("refused, previous configuration kept: ")+m.LastReloadError)
	} else {
		row("Last reload", "ok")
	}
	poll := age(m.LastPollUSec, now)
	if m.PollIntervalUSec > 0 {
		poll += fmt.Sprintf(" (every %s)", time.Duration(m.PollIntervalUSec)*time.Microsecond)
	}
	row("Last poll", poll)
	for i, c := range m.Conditions {
		label := ""
		if i == 0 {
			label = "Conditions"
		}
		sev := p.health(severityWord(c.Fatal, false))
		row(label, fmt.Sprintf("%s %s", sev, c.Message))
	}
	if m.RejectedEvents > 0 {
		row("Rejected", p.red(fmt.Sprintf("%d events rejected as invalid by a sink and parked", m.RejectedEvents))+
			" (journalctl -u nichealthd says why; nichealthctl events --retry-rejected offers them again)")
	}
}
