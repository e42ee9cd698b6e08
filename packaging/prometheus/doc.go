// Package prometheus holds the Prometheus recording and alerting rules for
// nichealthd (nichealth.rules.yml) and their promtool unit tests
// (nichealth.rules.test.yml, run by packaging/test/prometheus-rules.sh). It
// has no code: its Go test proves that every rule expression names only
// metrics the daemon serves or the rules record, taken from the metrics
// package's own table (and the fabric share's series the map reads), so a
// renamed metric cannot silence an alert; and that the fabric link rules'
// thresholds are the counter table's for the same counter.
package prometheus
