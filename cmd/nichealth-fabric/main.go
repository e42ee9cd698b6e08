package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/nichealth/nichealthd/fabric/ibnet"
	"github.com/nichealth/nichealthd/internal/regularfile"
	"github.com/nichealth/nichealthd/internal/version"
)

// Exit codes: 0 done, 1 the map or plan could not be made, 2 usage.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// maxInput bounds each input file: a 10,000-node fabric's ibnetdiscover
// output is about 5 MB, its forwarding tables a few tens of MB.
const maxInput = 256 << 20

const usage = `usage: nichealth-fabric map --ibnetdiscover FILE [--node-name-map FILE]
                            [--prometheus URL | --status DIR] [--timeout 30s]
                            [--json] [-o FILE.html] [--title TEXT]
       nichealth-fabric plan --ibnetdiscover FILE --lfts FILE --nodes FILE
                            [--node-name-map FILE] [--json] [-o DIR]

map draws the fabric of an ibnetdiscover output (ibnetdiscover > FILE, or
ibnetdiscover -p > FILE) as one offline HTML page (-o), or prints it as
JSON (--json), with the health the fleet's nichealthd report (--prometheus
or --status); with --prometheus also the switch ports the daemons read in
their fabric shares: a link whose switch port's error counters rise is
coloured, one whose switch port no node reads is dotted.

plan shares the reading of the switch ports between a job's hosts
(--nodes, one name a line or a Slurm host list) from the switches'
forwarding tables (dump_lfts > FILE): each host's list on standard output
(--json) or in DIR/<host>.json (-o).
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
	switch args[0] {
	case "--version", "version":
		fmt.Fprintln(stdout, "nichealth-fabric", version.String())
		return exitOK
	case "map":
		return runMap(args[1:], stdout, stderr)
	case "plan":
		return runPlan(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "nichealth-fabric: unknown command %q\n%s", args[0], usage)
	return exitUsage
}

// readGraph parses an ibnetdiscover output as it streams in, and applies
// a node-name map when one is given.
func readGraph(cmd, path, nameMap string, stderr io.Writer) (*ibnet.Graph, error) {
	f, err := regularfile.Open(path, maxInput)
	if err != nil {
		return nil, err
	}
	g, err := ibnet.ParseReader(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	warn(stderr, cmd, path, g.Problems, g.MoreProblems)
	if len(g.Nodes) == 0 {
		return nil, fmt.Errorf("%s holds no switch, HCA or router: is it ibnetdiscover's output (its topology file or -p; not -l or -H)?", path)
	}
	if nameMap != "" {
		b, err := regularfile.Read(nameMap, maxInput)
		if err != nil {
			return nil, err
		}
		m, probs := ibnet.ParseNodeNameMap(b)
		warn(stderr, cmd, nameMap, probs, 0)
		g.ApplyNames(m)
	}
	return g, nil
}

// warn lists a file's skipped lines: the first few, then a count, so a
// file of garbage does not flood the terminal.
func warn(w io.Writer, cmd, file string, probs []ibnet.Problem, more int) {
	const show = 10
	for i, p := range probs {
		if i == show {
			break
		}
		fmt.Fprintf(w, "nichealth-fabric %s: %s: skipped %s\n", cmd, filepath.Base(file), p)
	}
	if n := len(probs) + more - show; n > 0 {
		fmt.Fprintf(w, "nichealth-fabric %s: %s: %d more lines skipped\n", cmd, filepath.Base(file), n)
	}
}

// limitMemory sets a soft memory limit of 32 MiB plus one and a half
// times the inputs' size, unless GOMEMLIMIT says otherwise. A parsed
// fabric keeps about its input's size (fabric/ibnet's benchmarks); the
// limit stops the collector from letting the garbage of a large parse
// double the heap, at a little CPU. It is soft: a fabric that needs more
// gets it, collected more often.
func limitMemory(paths ...string) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	total := int64(32 << 20)
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			total += fi.Size() + fi.Size()/2
		}
	}
	debug.SetMemoryLimit(total)
}

// writeFile writes a file beside its destination and renames it in, so a
// reader never sees half of it.
func writeFile(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
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
