// Command nichealth-latency measures nichealthd end to end on a simulated
// node: how long a link fault written to sysfs takes to reach the JSON-lines
// sink and the D-Bus HealthEvent signal (mode latency), and how much memory
// the daemon holds after thousands of poll cycles, counted by the daemon's
// own metrics endpoint (mode rss). It runs the
// built daemon binary, a private dbus-daemon and a throw-away host tree, and
// changes nothing on the machine.
//
//	nichealth-latency --daemon bin/nichealthd --faults 200 --interval 100ms --shape dgx-h100
//	nichealth-latency --mode rss --shape xxl --interval 10ms --cycles 10000
//
// Exit status: 0 when the goal is met (latency p99 at most the poll
// interval plus 10 ms), 3 when it is not, 1 when the run failed, 2 for a
// usage error.
package main
