// Command nichealth-demo shows nichealthd at work on a simulated node.
//
// Without flags (make run) it builds a simulated DGX H100 host, starts a
// private D-Bus system bus and the daemon, summarises the first poll's
// baselines, injects faults one at a time and pairs each with the event
// that reports it and its detection latency, then closes with a summary.
//
// With --keep (make try) it leaves such a node running instead: the
// simulated host, a private system bus carrying the project's own D-Bus
// policy, and the daemon with D-Bus and loopback metrics on; it prints the
// export lines after which nichealthctl, busctl and curl work as the
// block of docs/operating.md shows. --stop (make try-stop) ends it.
package main
