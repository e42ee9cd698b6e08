// Package grafana holds the Grafana dashboard for nichealthd
// (nichealthd.json: a fleet view and a node view of port health, link
// flaps, counter rates, xmit_wait lost bandwidth and events). It has no
// code: its test proves that every query of the dashboard names only
// metrics the daemon serves, taken from the metrics package's own table,
// so a renamed metric cannot leave a silently empty panel behind.
package grafana
