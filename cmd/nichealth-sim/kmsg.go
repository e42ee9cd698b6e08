package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/kmsg"
	"github.com/nichealth/nichealthd/topology/sim"
)

// kmsgCommand runs "kmsg [--facility F] [--level L] [--nic NIC|--pci ADDR]
// [--seq N] [--count N] MESSAGE...": records in the kernel's format into
// H/dev/kmsg. --nic gives them the dictionary the kernel gives a NIC
// driver's own lines (SUBSYSTEM=pci, DEVICE=+pci:ADDR).
func kmsgCommand(h *sim.Host, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("kmsg", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	facility := fs.String("facility", "kern", "kern, user or a number")
	level := fs.Int("level", 3, "0 emerg .. 7 debug")
	nic := fs.String("nic", "", "dictionary of this NIC's PCI function")
	pci := fs.String("pci", "", "dictionary of this PCI address")
	seq := fs.Uint64("seq", 0, "sequence number of the first record (0: the next)")
	count := fs.Int("count", 1, "write the message this many times")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErr("kmsg wants MESSAGE, e.g. kmsg --nic mlx5_0 \"mlx5_core 0000:3b:00.0: ...\"")
	}
	r := kmsg.Record{Level: *level & 7, Message: strings.Join(pos, " ")}
	switch *facility {
	case "kern":
	case "user":
		r.Facility = kmsg.FacilityUser
	default:
		n, err := strconv.Atoi(*facility)
		if err != nil || n < 0 || n > 23 {
			return usageErr("bad facility %q: kern, user or 0..23", *facility)
		}
		r.Facility = n
	}
	switch {
	case *nic != "" && *pci != "":
		return usageErr("kmsg takes --nic or --pci, not both")
	case *nic != "":
		if r.Subsystem, r.Device, err = h.KmsgDict(*nic); err != nil {
			return err
		}
	case *pci != "":
		if !topology.IsPCIAddress(*pci) {
			return usageErr("bad PCI address %q (e.g. 0000:3b:00.0)", *pci)
		}
		r.Subsystem, r.Device = "pci", "+pci:"+*pci
	}
	if *count < 1 || *count > 1_000_000 {
		return usageErr("bad --count %d: 1..1000000", *count)
	}
	recs := make([]kmsg.Record, *count)
	for i := range recs {
		recs[i] = r
	}
	recs[0].Seq = *seq
	seqs, err := h.WriteKmsg(recs...)
	if len(seqs) > 0 {
		fmt.Fprintf(stdout, "wrote %d records (seq %d..%d) to %s\n", len(seqs), seqs[0], seqs[len(seqs)-1], h.KmsgPath())
	}
	return err
}

// kmsgDispatch takes --root among kmsg's own flags.
func kmsgDispatch(args []string, stdout io.Writer) error {
	root := ""
	rest := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--root" || a == "-root":
			if i+1 == len(args) {
				return usageErr("--root wants DIR")
			}
			root = args[i+1]
			i++
		case strings.HasPrefix(a, "--root="), strings.HasPrefix(a, "-root="):
			root = a[strings.IndexByte(a, '=')+1:]
		default:
			rest = append(rest, a)
		}
	}
	if root == "" {
		root = os.Getenv("NICHEALTH_SIM_ROOT")
	}
	if root == "" {
		return usageErr("kmsg needs --root DIR (or NICHEALTH_SIM_ROOT)")
	}
	h, err := sim.Open(root)
	if err != nil {
		return err
	}
	return kmsgCommand(h, rest, stdout)
}
