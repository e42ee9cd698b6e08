// Package repeats collapses a log line that keeps coming back (the same
// reload a thousand times, the same denied D-Bus call): the first of a
// kind is logged, repeats within a window are only counted, and the first
// one after the window is logged again with that count. Its cost per line
// is constant and the kinds it tells apart are capped, so a source
// flooding distinct lines (a helper's stderr) costs neither a core nor
// memory.
package repeats
