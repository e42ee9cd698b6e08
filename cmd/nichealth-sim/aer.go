package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/nichealth/nichealthd/topology/sim"
)

// aerCommand runs "aer add|reset|remove TARGET ...": TARGET is a PCI
// address or above:NIC, the function directly above that NIC.
func aerCommand(h *sim.Host, pos []string, stdout io.Writer) error {
	if len(pos) < 2 {
		return usageErr("aer wants add|reset|remove PCI|above:NIC ...")
	}
	pci := pos[1]
	if nic, ok := strings.CutPrefix(pci, "above:"); ok {
		var err error
		if pci, err = h.AERAbove(nic); err != nil {
			return err
		}
	}
	switch pos[0] {
	case "add":
		if len(pos) != 5 {
			return usageErr("aer add wants PCI|above:NIC CLASS NAME N")
		}
		n, err := strconv.ParseUint(pos[4], 10, 64)
		if err != nil {
			return usageErr("bad count %q", pos[4])
		}
		if err := h.AddAER(pci, pos[2], pos[3], n); err != nil {
			return err
		}
	case "reset":
		if err := h.ResetAER(pci); err != nil {
			return err
		}
	case "remove":
		if err := h.RemoveAER(pci); err != nil {
			return err
		}
	default:
		return usageErr("aer wants add, reset or remove, not %q", pos[0])
	}
	fmt.Fprintln(stdout, pci)
	return nil
}
