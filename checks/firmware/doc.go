// Package firmware judges what devlink knows of each monitored NIC
// function (observe's LinkStory, topology/devlink): a health reporter in
// error state, or whose error count moved since the last pass, is a
// condition on the function's ports (fatal for fw_fatal, the firmware's
// unrecoverable error; degraded for fw, tx, rx, vnic and any other), with
// the reporter's recover count and last dump time; firmware flashed but
// not running (stored fw.version differs from the running one) is a
// degraded finding: "firmware activation pending: reset or reboot".
//
// The first pass of a function is a baseline for its error counts: errors
// counted before the daemon first saw it are history, unless the reporter
// is still in error state. The counts survive restarts in the state file,
// so errors counted while the daemon was down are reported at start.
package firmware
