package devlink

import (
	"strconv"
	"strings"
)

// CompareFirmware orders two firmware versions as devlink prints mlx5's
// ("28.39.1002": major, minor, subminor): -1 when a is older, 0 when they
// are the same version, 1 when a is newer. Each dot-separated part is
// compared as a number when both are numbers (28.9 is older than 28.10,
// which a string comparison gets backwards, and 16.35.02000 is
// 16.35.2000), else as text; a version with more parts after equal ones
// is the newer.
func CompareFirmware(a, b string) int {
	pa, pb := strings.Split(strings.TrimSpace(a), "."), strings.Split(strings.TrimSpace(b), ".")
	for i := range min(len(pa), len(pb)) {
		na, ea := strconv.ParseUint(pa[i], 10, 64)
		nb, eb := strconv.ParseUint(pb[i], 10, 64)
		switch {
		case ea == nil && eb == nil:
			if na != nb {
				if na < nb {
					return -1
				}
				return 1
			}
		case pa[i] != pb[i]:
			return strings.Compare(pa[i], pb[i])
		}
	}
	switch {
	case len(pa) < len(pb):
		return -1
	case len(pa) > len(pb):
		return 1
	}
	return 0
}
