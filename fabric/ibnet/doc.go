// Package ibnet turns the text that ibnetdiscover(8) prints (its topology
// file format) and an opensm node-name map into a fabric graph: switches,
// HCAs and routers with their GUIDs, names and LIDs, their ports, and each
// physical link once with its active width and speed. Both parsers are
// pure functions over bytes: they never fail on a bad line, they skip it
// and say which line and why, so a truncated or hand-edited dump still
// draws what it holds.
package ibnet
