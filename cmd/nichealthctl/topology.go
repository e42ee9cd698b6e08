package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/internal/flagdoc"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/gpumeta"
	pci "github.com/nichealth/nichealthd/topology/inventory"
	"github.com/nichealth/nichealthd/topology/nvsmi"
	"github.com/nichealth/nichealthd/topology/roles"
)

// nvidiaSMITimeout bounds each nvidia-smi run: on a node whose driver is
// wedged nvidia-smi can hang, and collect must then fail, not hang too.
const nvidiaSMITimeout = 2 * time.Minute

const topologyUsage = `Usage: nichealthctl topology SUBCOMMAND [OPTIONS]

Offline commands for the GPU↔NIC topology that decides each NIC's role
(Compute, Storage, Management). None of them needs a running nichealthd.

Subcommands:
  parse [FILE|-]    read "nvidia-smi topo -m" output (a file, or stdin) and
                    print it as gpu_metadata.json (gpus, nic_topology)
  collect           run nvidia-smi on this node and write the metadata file
                    nichealthd reads (default ` + gpumeta.DefaultMetadataPath + `)
  show              discover the NICs of a host and print each one's role and
                    the reason for it

nichealthctl topology SUBCOMMAND --help shows its options.

Exit status: 0 success, 1 failure (unreadable input, nvidia-smi missing or
failing, no topology), 2 usage error.
`

// runTopology dispatches "nichealthctl topology ...".
func runTopology(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "nichealthctl topology: missing subcommand (parse, collect or show)")
		io.WriteString(stderr, topologyUsage)
		return exitUsage
	}
	switch args[0] {
	case "parse":
		return topologyParse(args[1:], stdin, stdout, stderr)
	case "collect":
		return topologyCollect(args[1:], stdout, stderr)
	case "show":
		return topologyShow(args[1:], stdout, stderr)
	case "-h", "--help", "-help", "help":
		io.WriteString(stdout, topologyUsage)
		return exitOK
	}
	fmt.Fprintf(stderr, "nichealthctl topology: unknown subcommand %q (parse, collect or show)\n", args[0])
	return exitUsage
}

func topologyFlagSet(name, usageLine string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("topology "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: nichealthctl topology %s\n", usageLine)
		flagdoc.PrintOptions(stderr, fs)
	}
	return fs
}

func topologyParse(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := topologyFlagSet("parse", "parse [FILE|-]\n\nReads nvidia-smi topo -m output from FILE (or stdin when FILE is - or absent)\n"+
		"and prints it as gpu_metadata.json. A paste that cannot be read without guessing\n"+
		"fails with the line and column of the damage.", stderr)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return usageError(stderr, fs, "takes at most one FILE, got %d arguments", len(pos))
	}
	name, in := "stdin", stdin
	if len(pos) == 1 && pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			fmt.Fprintf(stderr, "nichealthctl topology parse: %v\n", err)
			return exitFailed
		}
		defer f.Close()
		name, in = pos[0], f
	}
	m, err := nvsmi.Parse(in)
	if err != nil {
		fmt.Fprintf(stderr, "nichealthctl topology parse: %s: %v\n", name, err)
		return exitFailed
	}
	if err := writeJSON(stdout, m); err != nil {
		fmt.Fprintf(stderr, "nichealthctl topology parse: %v\n", err)
		return exitFailed
	}
	return exitOK
}

func topologyCollect(args []string, stdout, stderr io.Writer) int {
	fs := topologyFlagSet("collect", "collect [--output PATH] [--nvidia-smi PATH] [--node-name NAME]\n\n"+
		"Runs nvidia-smi topo -m (and nvidia-smi --query-gpu for PCI addresses) and writes\n"+
		"the GPU metadata file atomically (mode 0644).", stderr)
	output := fs.String("output", gpumeta.DefaultMetadataPath, "metadata file to write")
	smi := fs.String("nvidia-smi", "", "nvidia-smi binary (default: looked up in PATH)")
	node := fs.String("node-name", "", "node_name recorded in the file (default: the host name)")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		return usageError(stderr, fs, "takes no arguments, got %q", strings.Join(pos, " "))
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "nichealthctl topology collect: "+format+"\n", a...)
		return exitFailed
	}
	bin := *smi
	if bin == "" {
		p, err := exec.LookPath("nvidia-smi")
		if err != nil {
			return fail("nvidia-smi is not installed (not found in PATH); install the NVIDIA driver utilities, " +
				"pass --nvidia-smi PATH, or let nichealthd derive the topology from sysfs instead (topologySource = \"sysfs\", " +
				"or \"auto\", the default, when no metadata file exists)")
		}
		bin = p
	} else if _, err := os.Stat(bin); err != nil {
		return fail("nvidia-smi %s: %v; or let nichealthd derive the topology from sysfs (topologySource = \"sysfs\")", bin, err)
	}

	out, err := runTool(bin, "topo", "-m")
	if err != nil {
		return fail("%v", err)
	}
	m, err := nvsmi.Parse(bytes.NewReader(out))
	if err != nil {
		return fail("cannot read the output of %s topo -m: %v", bin, err)
	}
	// PCI addresses are optional for classification (seed 12.2 uses them for
	// card grouping only), so a failing query is a warning, not a failure.
	if csv, err := runTool(bin, "--query-gpu=index,pci.bus_id", "--format=csv,noheader"); err != nil {
		fmt.Fprintf(stderr, "nichealthctl topology collect: warning: no GPU PCI addresses: %v\n", err)
	} else {
		addrs := parseBusIDs(csv)
		for i := range m.GPUs {
			m.GPUs[i].PCIAddress = addrs[m.GPUs[i].ID]
		}
	}
	name := *node
	if name == "" {
		if h, err := os.Hostname(); err == nil {
			name = h
		}
	}
	doc, err := gpumeta.MarshalDocument(m, name, time.Now())
	if err != nil {
		return fail("encode: %v", err)
	}
	if err := writeFileAtomic(*output, doc, 0o644); err != nil {
		return fail("%v", err)
	}
	fmt.Fprintf(stdout, "Wrote %s: %d GPUs, %d NICs.\n", *output, len(m.GPUs), len(m.NICs))
	return exitOK
}

// runTool runs bin with args and returns its stdout; the error carries the
// tool's own stderr, which says why (no driver loaded, no GPU, ...).
func runTool(bin string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), nvidiaSMITimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(errBuf.String())
		if msg == "" {
			msg = strings.TrimSpace(string(out))
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("timed out after %v", nvidiaSMITimeout)
		}
		if msg != "" {
			return nil, fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, msg)
		}
		return nil, fmt.Errorf("%s %s: %w", bin, strings.Join(args, " "), err)
	}
	return out, nil
}

// parseBusIDs reads "0, 00000000:18:00.0" lines into index -> sysfs-style
// address. Lines that do not parse are skipped.
func parseBusIDs(b []byte) map[int]string {
	out := map[int]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		idx, addr, ok := strings.Cut(sc.Text(), ",")
		if !ok {
			continue
		}
		i, err := strconv.Atoi(strings.TrimSpace(idx))
		if err != nil || i < 0 {
			continue
		}
		if a := gpumeta.NormalizePCIAddress(addr); a != "" {
			out[i] = a
		}
	}
	return out
}

// writeFileAtomic replaces path with data so that a reader (the daemon
// starting at the same moment) sees the old file or the new one, never a
// torn one: temp file in the same directory, fsync, rename, fsync the
// directory so the rename survives a crash.
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create directory %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	cleanup := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return cleanup(err)
	}
	if err := f.Chmod(mode); err != nil {
		return cleanup(err)
	}
	if err := f.Sync(); err != nil {
		return cleanup(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

func topologyShow(args []string, stdout, stderr io.Writer) int {
	fs := topologyFlagSet("show", "show [--root H | --sysfs-root DIR --procfs-root DIR] [--config FILE] [--metadata PATH] [--source auto|metadata|sysfs] [--all] [--json]\n\n"+
		"Discovers the RDMA devices of a host (this one, or a simulated host directory H)\n"+
		"and prints each NIC's role and the reason for it, as nichealthd decides (the same\n"+
		"classification; with --config, under that file's NIC filter and topology source).", stderr)
	cfgPath := fs.String("config", "", "classify under this configuration's nicExclusionRegex, nicInclusionRegexOverride, topologySource and metadataPath (the flags still win)")
	root := fs.String("root", "", "host directory holding sys, proc and var/lib/nvsentinel (a simulated host)")
	sysRoot := fs.String("sysfs-root", "", "sysfs mount point (default /sys, or H/sys with --root)")
	procRoot := fs.String("procfs-root", "", "procfs mount point (default /proc, or H/proc with --root)")
	metaPath := fs.String("metadata", "", "gpu_metadata.json (default "+gpumeta.DefaultMetadataPath+", under H with --root)")
	source := fs.String("source", gpumeta.TopologyAuto, "where the GPU↔NIC matrix comes from: auto, metadata or sysfs")
	all := fs.Bool("all", false, "also list SR-IOV VFs and non-mlx5 devices")
	asJSON := fs.Bool("json", false, "machine-readable JSON output")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		return usageError(stderr, fs, "takes no arguments, got %q", strings.Join(pos, " "))
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "nichealthctl topology show: "+format+"\n", a...)
		return exitFailed
	}
	var paths topology.Paths
	meta := *metaPath
	if *root != "" {
		if st, err := os.Stat(*root); err != nil || !st.IsDir() {
			return fail("--root %s is not a directory", *root)
		}
		paths.SysfsRoot = filepath.Join(*root, "sys")
		paths.ProcfsRoot = filepath.Join(*root, "proc")
		paths.DevRoot = filepath.Join(*root, "dev")
		if meta == "" {
			meta = filepath.Join(*root, gpumeta.DefaultMetadataPath)
		}
	}
	if *sysRoot != "" {
		paths.SysfsRoot = *sysRoot
	}
	if *procRoot != "" {
		paths.ProcfsRoot = *procRoot
	}
	opts := observe.ClassifyOptions{TopologySource: *source, MetadataPath: meta}
	if *cfgPath != "" {
		cfg, err := config.Load(*cfgPath)
		if err != nil {
			return fail("%v", err)
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		opts.Filter = cfg.Filter
		if !set["source"] {
			opts.TopologySource = cfg.TopologySource
		}
		if meta == "" {
			opts.MetadataPath = cfg.MetadataPath
		}
		if *root == "" && !set["sysfs-root"] && !set["procfs-root"] {
			paths = cfg.Paths
		}
	}
	paths = paths.WithDefaults()
	opts.Paths = paths

	devs, probs, err := topology.Discover(paths, opts.Filter)
	if err != nil {
		return fail("%v", err)
	}
	for _, p := range probs {
		fmt.Fprintf(stderr, "warning: %v\n", p)
	}
	c, err := observe.Classify(devs, opts, nil)
	for _, n := range c.Notes {
		fmt.Fprintf(stderr, "note: %s\n", n)
	}
	if c.RouteErr != nil {
		fmt.Fprintf(stderr, "warning: default route not checked: %v\n", c.RouteErr)
	}
	if err != nil {
		return fail("%v", err)
	}
	m := c.Matrix
	from := "no Mellanox NIC to classify"
	switch {
	case c.Pinned:
		from = "none: roles pinned by nicInclusionRegexOverride"
	case m != nil:
		from = m.Source
	}

	type row struct {
		Device   string `json:"device"`
		Card     string `json:"card"`
		NUMANode int    `json:"numaNode"`
		Link     string `json:"linkLayer"`
		HCAType  string `json:"hcaType"`
		Role     string `json:"role"`
		Reason   string `json:"reason"`
	}
	var rows []row
	hidden := 0
	for _, d := range devs {
		if (d.IsVF || !d.Mellanox) && !*all {
			hidden++
			continue
		}
		rows = append(rows, row{d.Name, d.Card, d.NUMANode, d.LinkLayer(), d.HCAType, string(d.Role), d.RoleReason})
	}
	// The functions the RDMA stack made nothing of: on the PCI bus, no
	// RDMA device (what nichealthd reports as a failed NIC function).
	if fns, _, err := pci.Scan(paths.SysfsRoot, nil); err == nil {
		rnd, _ := roles.DefaultRouteNetdevs(paths)
		pci.Attach(fns, devs, opts.Filter, nil)
		pci.Classify(fns, m, opts.Filter.Overridden(), paths, rnd, nil)
		for _, f := range fns {
			if f.IsVF || f.State() == pci.Healthy {
				continue
			}
			why := fmt.Sprintf("no RDMA device (%s, driver %s)", f.State(), orDash(f.Driver))
			if f.RoleReason != "" {
				why += "; would be " + f.RoleReason
			}
			rows = append(rows, row{f.Address, f.Card, f.NUMANode, f.LinkLayer(), "", string(f.Role), why})
		}
	}
	if *asJSON {
		if err := writeJSON(stdout, map[string]any{"source": from, "nics": rows}); err != nil {
			return fail("%v", err)
		}
		return exitOK
	}
	if m != nil {
		fmt.Fprintf(stdout, "GPU topology from %s (%d GPUs)\n\n", m.Source, len(m.GPUs))
	} else {
		fmt.Fprintf(stdout, "GPU topology: %s\n\n", from)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE\tCARD\tNUMA\tLINK\tHCA\tROLE\tREASON")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", r.Device, orDash(r.Card), r.NUMANode, orDash(r.Link), orDash(r.HCAType), orDash(r.Role), r.Reason)
	}
	if err := tw.Flush(); err != nil {
		return fail("%v", err)
	}
	if hidden > 0 {
		fmt.Fprintf(stdout, "\n%d SR-IOV VFs and non-mlx5 devices not shown (never monitored; --all lists them).\n", hidden)
	}
	return exitOK
}
