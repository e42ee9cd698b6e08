//go:build !cgo

package main

import (
	"errors"
	"os"
)

// Without cgo there are no libraries to call: say how to build it.
func newFabric() (fabric, error) {
	return nil, errors.New("built without cgo: rebuild with CGO_ENABLED=1 and Debian's libibumad-dev and libibmad-dev installed (make build does)")
}

func exit(code int) { os.Exit(code) }
