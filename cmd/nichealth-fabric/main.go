package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/nichealth/nichealthd/fabric/ibnet"
	"github.com/nichealth/nichealthd/fabric/overlay"
	"github.com/nichealth/nichealthd/fabric/page"
	"github.com/nichealth/nichealthd/internal/regularfile"
	"github.com/nichealth/nichealthd/internal/version"
)

// Exit codes: 0 done, 1 the map could not be made, 2 usage.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// maxInput bounds the dump and the map: a 10,000-node fabric's
// ibnetdiscover output is about 5 MB.
const maxInput = 256 << 20

const usage = `usage: nichealth-fabric map --ibnetdiscover FILE [--node-name-map FILE]
                            [--prometheus URL | --status DIR] [--timeout 30s]
                            [--json] [-o FILE.html] [--title TEXT]

Draws the fabric of an ibnetdiscover output (ibnetdiscover > FILE) as one
offline HTML page (-o), or prints it as JSON (--json): switches, HCAs,
routers and every link's two ends with width and speed. --prometheus asks
the Prometheus that scrapes the fleet's nichealthd for every port's
verdict; --status reads a directory of 'nichealthctl status --json' dumps
(one *.json file per node) instead.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] == "--version" || args[0] == "version" {
		fmt.Fprintln(stdout, "nichealth-fabric", version.String())
		return exitOK
	}
	if args[0] != "map" {
		fmt.Fprintf(stderr, "nichealth-fabric: unknown command %q\n%s", args[0], usage)
		return exitUsage
	}
	fs := flag.NewFlagSet("map", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	topo := fs.String("ibnetdiscover", "", "ibnetdiscover output `FILE`")
	nameMap := fs.String("node-name-map", "", "opensm node-name map `FILE` (GUID \"name\" per line)")
	prom := fs.String("prometheus", "", "Prometheus base `URL` for the health overlay, e.g. http://prometheus:9090")
	status := fs.String("status", "", "`DIR` of nichealthctl status --json dumps for the health overlay")
	timeout := fs.Duration("timeout", 30*time.Second, "limit for all Prometheus queries together")
	asJSON := fs.Bool("json", false, "print the graph as JSON on stdout")
	out := fs.String("o", "", "write the HTML page to `FILE`")
	title := fs.String("title", "", "page title (default: the dump's file name)")
	if err := fs.Parse(args[1:]); err != nil {
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

	raw, err := regularfile.Read(*topo, maxInput)
	if err != nil {
		fmt.Fprintf(stderr, "nichealth-fabric map: %v\n", err)
		return exitFailed
	}
	g := ibnet.Parse(raw)
	warn(stderr, *topo, g.Problems)
	if len(g.Nodes) == 0 {
		fmt.Fprintf(stderr, "nichealth-fabric map: %s holds no switch, HCA or router block: is it ibnetdiscover's output (not -p, -l or -H)?\n", *topo)
		return exitFailed
	}
	if *nameMap != "" {
		b, err := regularfile.Read(*nameMap, maxInput)
		if err != nil {
			fmt.Fprintf(stderr, "nichealth-fabric map: %v\n", err)
			return exitFailed
		}
		m, probs := ibnet.ParseNodeNameMap(b)
		warn(stderr, *nameMap, probs)
		g.ApplyNames(m)
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
		if err != nil {
			fmt.Fprintf(stderr, "nichealth-fabric map: %v\n", err)
			return exitFailed
		}
		for _, p := range probs {
			fmt.Fprintf(stderr, "nichealth-fabric map: skipped %v\n", p)
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
		if err := writePage(*out, m); err != nil {
			fmt.Fprintf(stderr, "nichealth-fabric map: %v\n", err)
			return exitFailed
		}
	}
	return exitOK
}

// warn lists a file's skipped lines: the first few, then a count, so a
// file of garbage does not flood the terminal.
func warn(w io.Writer, file string, probs []ibnet.Problem) {
	const show = 10
	for i, p := range probs {
		if i == show {
			fmt.Fprintf(w, "nichealth-fabric map: %s: %d more lines skipped\n", file, len(probs)-show)
			break
		}
		fmt.Fprintf(w, "nichealth-fabric map: %s: skipped %s\n", file, p)
	}
}

// jsonEnd is one end of a link in --json.
type jsonEnd struct {
	GUID     string `json:"guid"`
	Port     int    `json:"port"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	PortGUID string `json:"portGUID,omitempty"`
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
}

func writeJSON(w io.Writer, g *ibnet.Graph, m *page.Model) error {
	verdict := map[string]string{}
	for _, n := range m.Nodes {
		for _, p := range n.Ports {
			if p.Verdict != overlay.NotReported {
				verdict[fmt.Sprintf("%s/%d", n.ID, p.Num)] = p.Verdict.String()
			}
		}
	}
	end := func(e ibnet.End) jsonEnd {
		j := jsonEnd{GUID: e.GUID.String(), Port: e.Port, Name: e.Name, Kind: e.Kind.String(),
			Verdict: verdict[fmt.Sprintf("%s/%d", e.GUID, e.Port)]}
		if e.PortGUID != 0 {
			j.PortGUID = e.PortGUID.String()
		}
		return j
	}
	out := struct {
		Switches int        `json:"switches"`
		HCAs     int        `json:"hcas"`
		Routers  int        `json:"routers"`
		Links    []jsonLink `json:"links"`
		Health   string     `json:"health,omitempty"`
	}{g.Count(ibnet.Switch), g.Count(ibnet.HCA), g.Count(ibnet.Router), make([]jsonLink, 0, len(g.Links)), m.Health}
	for i, l := range g.Links {
		out.Links = append(out.Links, jsonLink{A: end(l.A), B: end(l.B), Width: l.Width, Speed: l.Speed, Gbps: l.Gbps,
			Degraded: l.Degraded, Expected: l.Expected, Verdict: m.Links[i].Verdict.String()})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// writePage writes the page next to its destination and renames it in,
// so a browser never opens half a page.
func writePage(path string, m *page.Model) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := page.Render(tmp, m); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
