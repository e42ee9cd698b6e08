package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/nichealth/nichealthd/topology/sim"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: nichealth-sim COMMAND [--root DIR] ARGS...

  build --shape SHAPE --root DIR [--no-metadata] [--bond] [--foreign-rdma]
        [--node-name N] [--private-files] [--no-aer]
  shapes                                  list shapes
  list --root DIR [--json]                devices and their expected roles
  port-state DEV PORT STATE PHYS          e.g. mlx5_0 1 DOWN Disabled ("" keeps one)
  counter set|add DEV PORT REL VALUE      REL e.g. counters/link_downed
  counter reset DEV PORT
  raw DEV PORT REL CONTENT                write CONTENT verbatim (e.g. "N/A (no PMA)")
  rate DEV PORT RATE                      e.g. "200 Gb/sec (4X HDR)"
  remove DEV | restore DEV                NIC falls off the PCI bus / comes back
  detach DEV unbound|no-rdma|driver:NAME  the RDMA device goes, the PCI function
                                          stays: no driver, mlx5_core without
                                          mlx5_ib, another driver (restore DEV undoes)
  limited-pf DEV on|off                   VPD marks DEV a Fabric Manager limited PF
  firmware DEV FW_VER [BOARD_ID]          rewrite fw_ver (and board_id, the PSID)
  rename OLD NEW                          new ib device name, same PCI address
  fifo DEV PORT REL | unfifo DEV PORT REL make a file block readers / undo
  fail DEV PORT REL ERRNO|off             reads of REL fail with ERRNO (EIO, EINVAL,
                                          EOPNOTSUPP, EACCES, EPERM, ...) / undo (*)
  guid DEV PORT GUID                      a port's GUID (gids/0), or with PORT 0 the device's
                                          node GUID: e.g. a fabric lab node's, mlx5_0 1 0xa088c20300ab0001
  gid DEV PORT ok|no-v2|no-ipv4|empty     a RoCE port's GID table (seed 9.1): as the RDMA
                                          core fills it, RoCE v1 entries only, link-local
                                          only, or every entry unused
  operstate NETDEV STATE                  up, down, ...
  carrier-changes NETDEV N
  phy NETDEV STAT VALUE|+DELTA            driver statistic, e.g. eth2 rx_corrected_bits_phy +3000000000 (*)
  roce DEV PORT SIGNAL +DELTA             a RoCE signal where mlx5 keeps it (hw_counters or
                                          the netdev's statistics), e.g. mlx5_6 1
                                          out_of_sequence +600 (statistics: *)
  link-down NETDEV REASON [SUB]|off       why the driver says the link is down (ethtool's
                                          extended link state), e.g. eth2 cable_issue
                                          unsupported_cable, eth2 no_cable (*)
  module NETDEV install|remove           a healthy 400G OSFP optic in NETDEV's cage / none (*)
  module NETDEV install dac|sfp28        a passive copper QSFP28 DAC (no diagnostics) / a
                                         healthy 25G SFP28 optic (SFF-8472) instead
  module NETDEV temperature C            the module's temperature, e.g. 77
  module NETDEV rx LANE DBM              a lane's received power, e.g. 3 -- -12
  module NETDEV bias LANE MA             a lane's Tx laser bias, e.g. 2 128 (high warning 125)
  module NETDEV los LANE on|off          a lane's latched Rx loss of signal
  devlink DEV report|recover REPORTER    DEV's devlink health reporter (fw, fw_fatal, vnic)
                                         reports an error (stays in error) / recovers (*)
  devlink DEV firmware RUNNING STORED    DEV's running and stored fw.version (*)
  default-route NETDEV|none               IPv4 default route (proc/net/route)
  default-route6 NETDEV|none              IPv6 default route (proc/net/ipv6_route)
  boot-id [ID]                            set (or randomize) the boot id; prints it
  metadata write|remove                   rewrite or delete gpu_metadata.json
  pcie-link PCI-ADDR|NIC SPEED WIDTH      current PCIe link of a hop (a NIC: the port
                                          above it), e.g. 0000:17:00.0 "" 8 ("" keeps one)
  aer add PCI|above:NIC CLASS NAME N      PCIe AER errors, CLASS correctable|nonfatal|fatal,
                                          e.g. aer add above:mlx5_0 fatal MalfTLP 1
  aer reset|remove PCI|above:NIC          zero the AER counters / delete the AER files
  kmsg [--nic NIC|--pci ADDR] [--facility kern|user|N] [--level L] [--seq N] [--count N] MESSAGE
                                          kernel log records into H/dev/kmsg (a FIFO), e.g.
                                          kmsg --nic mlx5_0 "mlx5_core 0000:3b:00.0: ... timeout.
                                          Will cause a leak of a command resource"
  farend [--lab DIR] errors COUNTER N     the switch port at the far end of make try's mlx5_0
                                          (ibsw-leaf1 port 17 in its fabric lab) sets a PMA
                                          counter, e.g. errors SymbolErrorCounter 500
  farend [--lab DIR] unlink|relink|clear  pull / plug back that cable; clear zeroes the
                                          port's error counters and plugs it back
                                          (DIR: the lab beside --root, as make try keeps it)

(*) what a temporary directory cannot make the kernel say: only nichealthd
built with -tags simulate and started with --simulate-root H sees it; the
production nichealthd reads the host's own files and driver.

--root defaults to $NICHEALTH_SIM_ROOT.`

// errUsage marks a command-line mistake (the usage text is worth printing).
var errUsage = errors.New("usage")

func run(args []string, stdout, stderr io.Writer) int {
	if err := dispatch(args, stdout); err != nil {
		msg := err.Error()
		if errors.Is(err, errUsage) {
			msg += " (nichealth-sim help for usage)"
		}
		fmt.Fprintln(stderr, "nichealth-sim: "+strings.ReplaceAll(msg, "\n", " "))
		return 2
	}
	return 0
}

func usageErr(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUsage}, a...)...)
}

// parseInterleaved lets flags appear before, between or after positional
// arguments (the flag package alone stops at the first positional).
// Everything after "--" is positional, so a value may start with a dash
// (module NETDEV rx 3 -- -12).
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	pos := []string{}
	after := []string{}
	for i, a := range args {
		if a == "--" {
			args, after = args[:i], args[i+1:]
			break
		}
	}
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usageErr("%v", err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return append(pos, after...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func dispatch(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usageErr("no command")
	}
	cmd, args := args[0], args[1:]
	if cmd == "help" || cmd == "-h" || cmd == "--help" {
		fmt.Fprintln(stdout, usage)
		return nil
	}
	if cmd == "kmsg" {
		return kmsgDispatch(args, stdout)
	}
	if cmd == "farend" {
		return farEndDispatch(args, stdout)
	}
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	root := fs.String("root", os.Getenv("NICHEALTH_SIM_ROOT"), "simulated host directory")
	shape := fs.String("shape", "", "node shape (build)")
	noMeta := fs.Bool("no-metadata", false, "build without gpu_metadata.json")
	bond := fs.Bool("bond", false, "put the default-route netdev under bond0")
	nodeName := fs.String("node-name", "", "node_name in the metadata")
	private := fs.Bool("private-files", false, "one inode per file")
	foreign := fs.Bool("foreign-rdma", false, "add irdma0, a non-mlx5 RDMA device")
	asJSON := fs.Bool("json", false, "list as JSON")
	noAER := fs.Bool("no-aer", false, "build without PCIe AER counter files")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	needRoot := func() error {
		if *root == "" {
			return usageErr("%s needs --root DIR (or NICHEALTH_SIM_ROOT)", cmd)
		}
		return nil
	}
	want := func(n int, what string) error {
		if len(pos) != n {
			return usageErr("%s wants %s, got %d argument(s)", cmd, what, len(pos))
		}
		return needRoot()
	}

	switch cmd {
	case "shapes":
		for _, s := range sim.Shapes() {
			d, _ := sim.Describe(s)
			fmt.Fprintf(stdout, "%-12s %s\n", s, d)
		}
		return nil
	case "build":
		if err := want(0, "no positional arguments"); err != nil {
			return err
		}
		if *shape == "" {
			return usageErr("build needs --shape (one of %s)", strings.Join(sim.Shapes(), ", "))
		}
		h, err := sim.BuildWith(*root, *shape, sim.BuildOptions{NoMetadata: *noMeta, Bond: *bond, NodeName: *nodeName, PrivateFiles: *private, ForeignRDMA: *foreign, NoAER: *noAER})
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "built %s in %s: sysfsRoot=%s procfsRoot=%s devRoot=%s\n", *shape, h.Root, h.SysRoot(), h.ProcRoot(), h.DevRoot())
		return nil
	}

	if err := needRoot(); err != nil {
		return err
	}
	h, err := sim.Open(*root)
	if err != nil {
		return err
	}
	port := func(s string) (int, error) {
		p, err := strconv.Atoi(s)
		if err != nil || p < 1 {
			return 0, usageErr("bad port %q: want a number from 1", s)
		}
		return p, nil
	}
	switch cmd {
	case "list":
		if err := want(0, "no positional arguments"); err != nil {
			return err
		}
		return list(h, stdout, *asJSON)
	case "port-state":
		if err := want(4, "DEV PORT STATE PHYS"); err != nil {
			return err
		}
		p, err := port(pos[1])
		if err != nil {
			return err
		}
		return h.SetPortState(pos[0], p, pos[2], pos[3])
	case "counter":
		if len(pos) == 0 {
			return usageErr("counter wants set|add|reset")
		}
		sub := pos[0]
		pos = pos[1:]
		switch sub {
		case "set", "add":
			if len(pos) != 4 {
				return usageErr("counter %s wants DEV PORT REL VALUE", sub)
			}
			p, err := port(pos[1])
			if err != nil {
				return err
			}
			v, err := strconv.ParseUint(pos[3], 10, 64)
			if err != nil {
				return usageErr("bad counter value %q: want a non-negative integer", pos[3])
			}
			if sub == "set" {
				return h.SetCounter(pos[0], p, pos[2], v)
			}
			return h.AddCounter(pos[0], p, pos[2], v)
		case "reset":
			if len(pos) != 2 {
				return usageErr("counter reset wants DEV PORT")
			}
			p, err := port(pos[1])
			if err != nil {
				return err
			}
			return h.ResetCounters(pos[0], p)
		}
		return usageErr("unknown counter sub-command %q (set, add, reset)", sub)
	case "raw", "fifo", "unfifo", "rate":
		n, what := 3, "DEV PORT REL"
		if cmd == "raw" {
			n, what = 4, "DEV PORT REL CONTENT"
		}
		if cmd == "rate" {
			what = "DEV PORT RATE"
		}
		if err := want(n, what); err != nil {
			return err
		}
		p, err := port(pos[1])
		if err != nil {
			return err
		}
		switch cmd {
		case "raw":
			return h.WriteRaw(pos[0], p, pos[2], pos[3])
		case "fifo":
			return h.MakeFIFO(pos[0], p, pos[2])
		case "unfifo":
			return h.UnmakeFIFO(pos[0], p, pos[2])
		default:
			return h.SetRate(pos[0], p, pos[2])
		}
	case "fail":
		if err := want(4, "DEV PORT REL ERRNO|off"); err != nil {
			return err
		}
		p, err := port(pos[1])
		if err != nil {
			return err
		}
		return h.FailFile(pos[0], p, pos[2], pos[3])
	case "guid":
		if err := want(3, "DEV PORT GUID"); err != nil {
			return err
		}
		p, err := strconv.Atoi(pos[1])
		if err != nil || p < 0 {
			return fmt.Errorf("%w: PORT %q: 0 (the device's node GUID) or a port number", errUsage, pos[1])
		}
		g, err := strconv.ParseUint(strings.TrimPrefix(strings.ReplaceAll(pos[2], ":", ""), "0x"), 16, 64)
		if err != nil {
			return fmt.Errorf("%w: GUID %q: 0x and up to 16 hex digits", errUsage, pos[2])
		}
		return h.SetGUID(pos[0], p, g)
	case "gid":
		if err := want(3, "DEV PORT ok|no-v2|no-ipv4|empty"); err != nil {
			return err
		}
		p, err := port(pos[1])
		if err != nil {
			return err
		}
		return h.SetGIDTable(pos[0], p, pos[2])
	case "remove", "restore":
		if err := want(1, "DEV"); err != nil {
			return err
		}
		if cmd == "remove" {
			return h.RemoveDevice(pos[0])
		}
		return h.RestoreDevice(pos[0])
	case "detach":
		if err := want(2, "DEV unbound|no-rdma|driver:NAME"); err != nil {
			return err
		}
		return h.DetachFunction(pos[0], pos[1])
	case "limited-pf":
		if err := want(2, "DEV on|off"); err != nil {
			return err
		}
		if pos[1] != "on" && pos[1] != "off" {
			return usageErr("limited-pf wants on or off, not %q", pos[1])
		}
		return h.SetLimitedPF(pos[0], pos[1] == "on")
	case "firmware":
		if len(pos) == 2 {
			pos = append(pos, "")
		}
		if err := want(3, "DEV FW_VER [BOARD_ID]"); err != nil {
			return err
		}
		return h.SetFirmware(pos[0], pos[1], pos[2])
	case "rename":
		if err := want(2, "OLD NEW"); err != nil {
			return err
		}
		return h.RenameDevice(pos[0], pos[1])
	case "operstate":
		if err := want(2, "NETDEV STATE"); err != nil {
			return err
		}
		return h.SetOperstate(pos[0], pos[1])
	case "carrier-changes":
		if err := want(2, "NETDEV N"); err != nil {
			return err
		}
		v, err := strconv.ParseUint(pos[1], 10, 64)
		if err != nil {
			return usageErr("bad carrier_changes %q: want a non-negative integer", pos[1])
		}
		return h.SetCarrierChanges(pos[0], v)
	case "default-route", "default-route6":
		if err := want(1, "NETDEV or none"); err != nil {
			return err
		}
		nd := pos[0]
		if nd == "none" {
			nd = ""
		}
		if cmd == "default-route6" {
			return h.SetDefaultRoute6(nd)
		}
		return h.SetDefaultRoute(nd)
	case "boot-id":
		if len(pos) > 1 {
			return usageErr("boot-id wants at most one ID")
		}
		id := ""
		if len(pos) == 1 {
			id = pos[0]
			err = h.SetBootID(id)
		} else {
			id, err = h.NewBootID()
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, id)
		return nil
	case "pcie-link":
		if err := want(3, "PCI-ADDR|NIC SPEED WIDTH"); err != nil {
			return err
		}
		return pcieLink(h, stdout, pos[0], pos[1], pos[2])
	case "phy":
		if err := want(3, "NETDEV STAT VALUE|+DELTA"); err != nil {
			return err
		}
		return phy(h, pos[0], pos[1], pos[2])
	case "roce":
		if err := want(4, "DEV PORT SIGNAL +DELTA"); err != nil {
			return err
		}
		return roceSignal(h, pos[0], pos[1], pos[2], pos[3])
	case "link-down":
		if len(pos) < 2 || len(pos) > 3 {
			return usageErr("link-down wants NETDEV REASON [SUBREASON] or NETDEV off")
		}
		reason, sub := pos[1], ""
		if len(pos) == 3 {
			sub = pos[2]
		}
		if reason == "off" {
			reason = ""
		}
		return h.SetLinkDownReason(pos[0], reason, sub)
	case "module":
		return moduleCommand(h, pos)
	case "devlink":
		return devlinkCommand(h, pos)
	case "metadata":
		if err := want(1, "write or remove"); err != nil {
			return err
		}
		switch pos[0] {
		case "write":
			return h.WriteMetadata()
		case "remove":
			return h.RemoveMetadata()
		}
		return usageErr("metadata wants write or remove, not %q", pos[0])
	case "aer":
		return aerCommand(h, pos, stdout)
	}
	return usageErr("unknown command %q", cmd)
}

func list(h *sim.Host, w io.Writer, asJSON bool) error {
	devs := h.Devices()
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(devs)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE\tPCI\tNUMA\tLINK\tPORTS\tVF\tNETDEV\tHCA\tEXPECTED ROLE\tREASON")
	for _, d := range devs {
		role := string(d.ExpectedRole)
		if role == "" {
			role = "-"
		}
		name := d.Name
		switch {
		case d.Detached != "":
			name += " (" + d.Detached + ")"
		case d.Removed:
			name += " (removed)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%v\t%s\t%s\t%s\t%s\n", name, d.PCIAddress, d.NUMANode, d.LinkLayer, d.Ports, d.IsVF, d.NetDev, d.HCAType, role, d.RoleReason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "default route: %s\n", orNone(h.DefaultRoute()))
	if r6 := h.DefaultRoute6(); r6 != "" {
		fmt.Fprintf(w, "IPv6 default route: %s\n", r6)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
