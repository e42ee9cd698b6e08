// Package kernellog judges the kernel's own words about the NICs: kernel
// log records (topology/kmsg) matched against a table of patterns, which
// is data like the counter table (name, regex, severity, recommended
// action, description with the fix, de-duplication window, optionally N
// occurrences within T), overridable by name in the configuration. A
// matched record is attributed to a PCI function (the record's dictionary
// first, then the driver's "mlx5_core 0000:3b:00.0:" prefix, then a netdev
// or RDMA device name in the text) and becomes one condition per pattern
// and function on that NIC's ports, or on the node where the pattern says
// so. Fatal conditions latch until acknowledged or the host reboots;
// non-fatal ones clear after their quiet period. The check keeps its
// cursor (boot and sequence number) and its conditions in its own state
// section, so a restart neither repeats nor skips a record. The observer
// (package observe) reads the kernel log; Watch is the check as the runner
// runs it.
package kernellog
