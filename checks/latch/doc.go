// Package latch is what every check keeps of the conditions it raised:
// the one typed port key a check's memory is keyed by (Port), and the
// raised set (Set: raise, clear, has, the keys in order, and the
// validation that drops what no check could have written) that a check
// persists as its section of the state file, so that after a restart
// nothing is announced again and every raise still gets its clear.
//
// The package decides nothing about health and writes no file: each
// check still owns its section (its name, version, fields and what it
// accepts back); latch is the shape those sections share.
package latch
