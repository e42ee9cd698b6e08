// Package cards finds physical NIC cards that have fewer active ports than
// their peers (seed 4.3, 7.2 case 3): cards are compared only with cards of
// the same role, HCA type and shape, and the peers' most common active-port
// count is what a healthy card looks like. It is pure logic over discovered
// devices; the state check turns its verdicts into events.
package cards
