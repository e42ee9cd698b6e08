package counters

import (
	"strconv"
	"strings"

	"github.com/nichealth/nichealthd/config/countertable"
)

// unitSuffix is how a rate in unit is printed in messages (seed 11.1).
func unitSuffix(unit string) string {
	switch unit {
	case countertable.UnitMinute:
		return "/min"
	case countertable.UnitHour:
		return "/hour"
	}
	return "/sec"
}

// Key is the persisted-state key of one counter of one port (seed 6.6):
// "<device>:<port>:<counter>".
func Key(device string, port int, counter string) string {
	return device + ":" + strconv.Itoa(port) + ":" + counter
}

// ParseKey splits a Key. ok is false for a key this package did not write.
func ParseKey(key string) (device string, port int, counter string, ok bool) {
	device, rest, ok1 := strings.Cut(key, ":")
	p, counter, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 || device == "" || counter == "" {
		return "", 0, "", false
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, "", false
	}
	return device, n, counter, true
}
