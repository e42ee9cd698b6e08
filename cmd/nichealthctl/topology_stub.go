package main

import (
	"fmt"
	"io"
)

// runTopology is a placeholder until topology.go lands; delete this file then.
func runTopology(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "nichealthctl topology: not available in this build")
	return exitFailed
}
