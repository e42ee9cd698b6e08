// Package metrics serves the daemon's optional Prometheus endpoint: /metrics
// in the text exposition format 0.0.4, written here without a client
// library, from the same port and manager views the D-Bus API shows, and
// /healthz, which fails while the poll loop is stalled. The endpoint is off
// by default and meant for loopback (DESIGN.md section 7).
package metrics
