package main

import (
	"fmt"
	"io"

	"github.com/nichealth/nichealthd/topology/sim"
)

// pcieLink sets the current speed and/or width of one hop of a NIC's PCIe
// path and prints the hop it changed, so a script downtraining "the port
// above mlx5_0" learns its address.
func pcieLink(h *sim.Host, stdout io.Writer, target, speed, width string) error {
	if speed == "" && width == "" {
		return usageErr("pcie-link wants a SPEED or a WIDTH (\"\" keeps one)")
	}
	addr, err := h.SetPCIeLink(target, speed, width)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, addr)
	return nil
}
