package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"time"

	"github.com/nichealth/nichealthd/fabric/ibnet"
	"github.com/nichealth/nichealthd/fabric/overlay"
	"github.com/nichealth/nichealthd/fabric/page"
)

type mapOptions struct {
	topo, nameMap, prom, status, out, title *string
	timeout                                 *time.Duration
	asJSON                                  *bool
}

func mapFlags(stderr io.Writer) (*flag.FlagSet, mapOptions) {
	fs := flag.NewFlagSet("map", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	return fs, mapOptions{
		topo:    fs.String("ibnetdiscover", "", "ibnetdiscover output `FILE` (topology or -p)"),
		nameMap: fs.String("node-name-map", "", "opensm node-name map `FILE` (GUID \"name\" per line)"),
		prom:    fs.String("prometheus", "", "Prometheus base `URL` for the health overlay and the fabric shares' switch ports, e.g. http://prometheus:9090"),
		status:  fs.String("status", "", "`DIR` of nichealthctl status --json dumps for the health overlay"),
		timeout: fs.Duration("timeout", 30*time.Second, "limit for all Prometheus queries together"),
		asJSON:  fs.Bool("json", false, "print the graph as JSON on stdout"),
		out:     fs.String("o", "", "write the HTML page to `FILE`"),
		title:   fs.String("title", "", "page title (default: the dump's file name)"),
	}
}

func runMap(args []string, stdout, stderr io.Writer) int {
	fs, o := mapFlags(stderr)
	topo, nameMap, prom, status, timeout, asJSON, out, title := o.topo, o.nameMap, o.prom, o.status, o.timeout, o.asJSON, o.out, o.title
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	switch {
	case fs.NArg() != 0:
		fmt.Fprintf(stderr, "nichealth-fabric map: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	case *topo == "":
		fmt.Fprintln(stderr, "nichealth-fabric map: --ibnetdiscover FILE is required (save it with: ibnetdiscover > FILE)")
		return exitUsage
	case *prom != "" && *status != "":
		fmt.Fprintln(stderr, "nichealth-fabric map: give --prometheus or --status, not both")
		return exitUsage
	case !*asJSON && *out == "":
		fmt.Fprintln(stderr, "nichealth-fabric map: say what to make: -o FILE.html, --json, or both")
		return exitUsage
	}

	limitMemory(*topo, *nameMap)
	g, err := readGraph("map", *topo, *nameMap, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "nichealth-fabric map: %v\n", err)
		return exitFailed
	}
	var ov *overlay.Overlay
	switch {
	case *prom != "":
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		ov, err = overlay.FromPrometheus(ctx, &http.Client{}, *prom)
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "nichealth-fabric map: health from Prometheus: %v\n", err)
			return exitFailed
		}
	case *status != "":
		var probs []error
		ov, probs, err = overlay.FromStatusDir(*status)
		for _, p := range probs {
			fmt.Fprintf(stderr, "nichealth-fabric map: skipped %v\n", p)
		}
		if err != nil {
			fmt.Fprintf(stderr, "nichealth-fabric map: %v\n", err)
			return exitFailed
		}
	}

	if *title == "" {
		*title = "Fabric " + filepath.Base(*topo)
	}
	m := page.Build(*title, "ibnetdiscover "+filepath.Base(*topo), g, ov)
	if *asJSON {
		if err := writeJSON(stdout, g, m); err != nil {
			fmt.Fprintf(stderr, "nichealth-fabric map: %v\n", err)
			return exitFailed
		}
	}
	if *out != "" {
		if err := writeFile(*out, func(w io.Writer) error { return page.Render(w, m) }); err != nil {
			fmt.Fprintf(stderr, "nichealth-fabric map: %v\n", err)
			return exitFailed
		}
		// One line of what was written, on stdout unless --json owns it.
		say := stdout
		if *asJSON {
			say = stderr
		}
		fmt.Fprintf(say, "nichealth-fabric map: wrote %s: %s\n", *out, mapSummary(g, ov))
	}
	return exitOK
}

// mapSummary counts what a page shows: the fabric, and the health drawn
// on it and where it came from.
func mapSummary(g *ibnet.Graph, ov *overlay.Overlay) string {
	s := fmt.Sprintf("%d switches, %d HCAs, %d links", g.Count(ibnet.Switch), g.Count(ibnet.HCA), len(g.Links))
	if ov == nil {
		return s + ", no health (give --status DIR or --prometheus URL)"
	}
	return fmt.Sprintf("%s, health of %d ports from %s", s, len(ov.Ports), ov.Source)
}

// jsonEnd is one end of a link in --json.
type jsonEnd struct {
	GUID     string `json:"guid"`
	Port     int    `json:"port"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	PortGUID string `json:"portGUID,omitempty"`
	Label    string `json:"label,omitempty"`
	Verdict  string `json:"verdict,omitempty"`
}

type jsonLink struct {
	A        jsonEnd `json:"a"`
	B        jsonEnd `json:"b"`
	Width    string  `json:"width"`
	Speed    string  `json:"speed"`
	Gbps     float64 `json:"gbps"`
	Degraded bool    `json:"degraded"`
	Expected string  `json:"expected,omitempty"`
	Verdict  string  `json:"verdict,omitempty"`
	// Unread: a switch port of the link is in a fabric share but no
	// daemon has read it lately.
	Unread bool `json:"unread,omitempty"`
}

// writeJSON prints the graph link by link: a large fabric's JSON is
// never held whole.
func writeJSON(w io.Writer, g *ibnet.Graph, m *page.Model) error {
	type key struct{ node, port int }
	verdict := map[key]string{}
	for _, r := range m.Reports {
		verdict[key{r.Node, r.Port}] = r.Verdict.String()
	}
	end := func(e ibnet.End) jsonEnd {
		n := g.End(e)
		j := jsonEnd{GUID: n.GUID.String(), Port: int(e.Port), Name: n.Name, Kind: n.Kind.String(), Verdict: verdict[key{int(e.Node), int(e.Port)}]}
		if e.PortGUID != 0 {
			j.PortGUID = e.PortGUID.String()
		}
		if p := g.PortOf(int(e.Node), int(e.Port)); p != nil {
			j.Label = p.Label
		}
		return j
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	fmt.Fprintf(bw, "{\n  \"switches\": %d,\n  \"hcas\": %d,\n  \"routers\": %d,\n  \"links\": [", g.Count(ibnet.Switch), g.Count(ibnet.HCA), g.Count(ibnet.Router))
	for i := range g.Links {
		l := &g.Links[i]
		b, err := json.MarshalIndent(jsonLink{A: end(l.A), B: end(l.B), Width: l.Width.String(), Speed: l.Speed.String(), Gbps: l.Gbps(),
			Degraded: l.Degraded, Expected: l.Expected(), Verdict: m.Links[i].Verdict.String(), Unread: m.Links[i].Unread}, "    ", "  ")
		if err != nil {
			return err
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    ")
		bw.Write(b)
	}
	if len(g.Links) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("]")
	if m.Health != "" {
		h, err := json.Marshal(m.Health)
		if err != nil {
			return err
		}
		fmt.Fprintf(bw, ",\n  \"health\": %s", h)
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
}
