// Package sanity runs the link sanity checks of the classic InfiniBand
// health check (seed: "Scripts for InfiniBand Monitoring"): PCIe width and
// speed of each HCA and of every bridge and switch port on its path to the
// root port, the subnet manager LID of IB ports, the verbs and MAD
// character devices, and each port's rate against its role peers. It
// returns findings for the daemon and nichealthctl to report; it never
// emits events or decides severity itself.
package sanity
