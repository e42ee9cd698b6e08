// Package checks is the contract every check keeps with the runner
// (checks/runner): a check takes each cycle's observation (package
// observe), keeps its own memory (a versioned section of the state file),
// and returns condition changes keyed by event/condition, owning its raise
// and its clear. The checks themselves live below: ports (port state and
// presence), cards (card homogeneity, no subnet manager), counters,
// readfaults (hung and parked reads), aer, kernellog, inventory, sanity,
// rules; health sums their conditions into the one verdict, and runner
// runs them. latch is what their memories share: the one typed port key
// and the raised set each check keeps in its section.
package checks
