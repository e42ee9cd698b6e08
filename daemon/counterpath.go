package daemon

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/nichealth/nichealthd/checks/counters"
)

// confineCounterPath resolves the symlinks of a counter file's path when
// the read plan is built and checks that the file is still inside the
// directory the configured path is relative to (the port's, or the
// netdev's), itself resolved. The plan keeps reading the class path (the
// kernel's own symlinks, which every message and metric names). The configuration check is lexical; without
// this a symlink planted in the sysfs tree would make the daemon read any
// file it can, and publish its content as a counter value. A file that
// does not exist yet keeps its lexical path (it is missing, and read as
// such); ok is false when the file resolves outside.
func confineCounterPath(def *counters.Definition, portDir, netClassDir, netdev, path string) (resolved string, ok bool) {
	base := portDir
	if def.IsNetdev() {
		base = filepath.Join(netClassDir, netdev)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return path, errors.Is(err, fs.ErrNotExist)
	}
	realBase, err := filepath.EvalSymlinks(base)
	if err != nil {
		return path, false
	}
	rel, err := filepath.Rel(realBase, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return real, false
	}
	return real, true
}
