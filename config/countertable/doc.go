// Package countertable is the counter table as data (link counter seed
// section 10): the default rows (10.2) and the PHY rows, what a row means
// (threshold type, velocity window, the file it reads), the TOML overrides
// merged by name (10.3) and their validation (10.5). The counter check
// (checks/counters) judges readings against these rows.
package countertable
