// Package promlab runs a real Prometheus server (Debian's prometheus
// package) for a test: it scrapes the given targets and evaluates the
// given rules every half second, and the test asks it instant queries
// through the HTTP API. A machine without the binary skips the test, or
// fails it under CI=true (internal/component).
package promlab
