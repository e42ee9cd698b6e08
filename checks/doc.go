// Package checks decides what sysfs observations mean for the running
// workload and says it as events: the port state checks
// (InfiniBandStateCheck, EthernetStateCheck) with their first-poll,
// disappearance and card rules live here; counter thresholds live in
// checks/counters and card homogeneity in checks/cards. Nothing here
// reads files: the daemon observes, checks judge.
package checks
