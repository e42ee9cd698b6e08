package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/nichealth/nichealthd/fabric/plan"
	"github.com/nichealth/nichealthd/internal/fabricentry"
	"github.com/nichealth/nichealthd/internal/regularfile"
)

type planOptions struct {
	topo, lfts, nodes, nameMap, out *string
	asJSON                          *bool
}

func planFlags(stderr io.Writer) (*flag.FlagSet, planOptions) {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	return fs, planOptions{
		topo:    fs.String("ibnetdiscover", "", "ibnetdiscover output `FILE` (topology or -p)"),
		lfts:    fs.String("lfts", "", "the switches' forwarding tables as dump_lfts prints them (`FILE`)"),
		nodes:   fs.String("nodes", "", "the job's hosts (`FILE`: names, or a Slurm host list)"),
		nameMap: fs.String("node-name-map", "", "opensm node-name map `FILE` naming the hosts' HCAs"),
		asJSON:  fs.Bool("json", false, "print the plan as JSON on stdout"),
		out:     fs.String("o", "", "write one `DIR`/<host>.json per host"),
	}
}

func runPlan(args []string, stdout, stderr io.Writer) int {
	fs, o := planFlags(stderr)
	topo, lfts, nodes, nameMap, asJSON, out := o.topo, o.lfts, o.nodes, o.nameMap, o.asJSON, o.out
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	switch {
	case fs.NArg() != 0:
		fmt.Fprintf(stderr, "nichealth-fabric plan: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	case *topo == "" || *lfts == "" || *nodes == "":
		fmt.Fprintln(stderr, "nichealth-fabric plan: --ibnetdiscover FILE, --lfts FILE and --nodes FILE are required (ibnetdiscover -p > FILE; dump_lfts > FILE; the job's host names)")
		return exitUsage
	case !*asJSON && *out == "":
		fmt.Fprintln(stderr, "nichealth-fabric plan: say what to make: --json, -o DIR, or both")
		return exitUsage
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "nichealth-fabric plan: %v\n", err)
		return exitFailed
	}
	limitMemory(*topo, *nameMap)
	g, err := readGraph("plan", *topo, *nameMap, stderr)
	if err != nil {
		return fail(err)
	}
	f, err := regularfile.Open(*lfts, maxInput)
	if err != nil {
		return fail(err)
	}
	tables, err := plan.ParseLFTs(f, g)
	f.Close()
	if err != nil {
		return fail(err)
	}
	warn(stderr, "plan", *lfts, tables.Problems, tables.MoreProblems)
	if len(tables.Switches) == 0 && tables.Foreign > 0 {
		return fail(fmt.Errorf("%s holds %d forwarding tables, none of a switch in %s: are both dumps of the same fabric?", *lfts, tables.Foreign, *topo))
	}
	if len(tables.Switches) == 0 {
		return fail(fmt.Errorf("%s holds no forwarding table: is it dump_lfts' output?", *lfts))
	}
	f, err = regularfile.Open(*nodes, maxInput)
	if err != nil {
		return fail(err)
	}
	hosts, probs, err := plan.ParseHosts(f)
	f.Close()
	if err != nil {
		return fail(err)
	}
	warn(stderr, "plan", *nodes, probs, 0)
	if len(hosts) == 0 {
		return fail(fmt.Errorf("%s names no host", *nodes))
	}
	p, notes := plan.Make(g, tables, hosts)
	for _, n := range notes {
		fmt.Fprintf(stderr, "nichealth-fabric plan: %s\n", n)
	}
	if _, missing := plan.HostPorts(g, hosts); len(missing) == len(hosts) {
		return fail(fmt.Errorf("none of the %d hosts of %s has an HCA in %s", len(hosts), *nodes, *topo))
	}
	if *asJSON {
		if err := writePlanJSON(stdout, p.Whole()); err != nil {
			return fail(err)
		}
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return fail(fmt.Errorf("create %s: %w", *out, err))
		}
		for _, h := range hosts {
			path := filepath.Join(*out, h+".json")
			if err := writeFile(path, func(w io.Writer) error { return writePlanJSON(w, p.File(h)) }); err != nil {
				return fail(err)
			}
		}
		say := stdout
		if *asJSON {
			say = stderr
		}
		fmt.Fprintf(say, "nichealth-fabric plan: wrote %s\n", planSummary(*out, hosts, p))
	}
	return exitOK
}

// planSummary is the one line of what -o wrote: the files, the ports
// assigned and those left unassigned.
func planSummary(dir string, hosts []string, p *plan.Plan) string {
	ports := 0
	for _, h := range hosts {
		ports += len(p.Assignments[h])
	}
	files := filepath.Join(dir, hosts[0]+".json")
	if len(hosts) > 1 {
		files = fmt.Sprintf("%d files %s ... %s", len(hosts), files, filepath.Join(dir, hosts[len(hosts)-1]+".json"))
	}
	return fmt.Sprintf("%s: %d switch ports assigned to %d hosts, %d unassigned", files, ports, len(hosts), len(p.Unassigned))
}

// writePlanJSON writes a whole plan or one host's file indented, as DESIGN 14
// gives it: {"assignments": {"<host>": [{"switchGUID", "port",
// "switchName"}]}, "unassigned": [...]}, each entry with its switch's port
// 0 LID too ("switchLID": the daemon's PMA reads go there). The shape is
// internal/fabricentry's, the one the daemon parses.
func writePlanJSON[T fabricentry.Plan | fabricentry.File](w io.Writer, v T) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
