// Package aer judges the PCIe Advanced Error Reporting counters the kernel
// keeps for each PCI function (aer_dev_correctable, aer_dev_nonfatal,
// aer_dev_fatal, and on root ports aer_rootport_total_err_*): the NIC
// function and every bridge or switch port on its path to the root port.
// It judges what topology/aerfile parsed, remembers the last counts of every
// function across restarts (its own state section), and turns new errors
// into conditions with their clears.
package aer
