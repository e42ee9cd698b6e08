// Package overlay gathers what the fleet's nichealthd daemons say about
// their ports (verdict, fatal conditions, latched counters, firing
// alerts) and keys it by node and port GUID, so it can be laid over a
// fabric graph drawn from ibnetdiscover. It reads either the Prometheus
// HTTP API that already scrapes the fleet (/metrics exports
// nichealth_port_info{node_guid,port_guid}) or a directory of
// `nichealthctl status --json` dumps; it never talks to a node itself.
//
// From Prometheus it also reads the switch ports the daemons read in
// their fabric shares (nichealth_fabric_*, DESIGN.md section 14), keyed
// by switch GUID and port: which daemon reads each, whether an error
// counter rises, whether a fabric rule fires, and which ports no daemon
// reads any more.
package overlay
