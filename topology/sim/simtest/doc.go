// Package simtest gives tests a simulated host in one call: it builds a
// topology/sim shape in a fast temporary directory (RAM-backed when the
// machine has one) and removes it when the test ends.
package simtest
