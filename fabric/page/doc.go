// Package page draws a fabric graph, with the fleet's health laid over
// it, as one self-contained HTML file: the data, the stylesheet and a
// small SVG renderer are inlined, so the file opens offline and from a
// mail attachment. Model does the judging (tiers, chassis, health per
// port and link) in Go, where it is tested; the script only lays out,
// collapses, searches and shows details.
package page
