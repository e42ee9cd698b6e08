// Package fattree builds synthetic InfiniBand fat trees (leaf, spine and
// core switches, hosts with one or more HCAs) and prints them the way the
// real tools do: ibnetdiscover's topology file and its -p ports report,
// and dump_lfts' forwarding tables routed minimum-hop as opensm's default
// routing engine does. Tests and benchmarks of the fabric tools use it
// for fabrics of any size; it is never part of a shipped binary.
package fattree
