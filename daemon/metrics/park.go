package metrics

import (
	"strconv"

	"github.com/nichealth/nichealthd/event"
)

// fillParked writes the parked files: their number, always (0 is the
// answer an alert on it needs), and one series per parked file.
func fillParked(e *encoder, s *snapshot) {
	n := 0
	for i := range s.health.Conditions {
		c := &s.health.Conditions[i]
		if c.Kind != event.KindReadParked {
			continue
		}
		n++
		e.add(mParkedFile, e.labels("device", c.Entity.Device, "port", strconv.Itoa(c.Entity.Port), "file", c.Entity.Name), uval(1))
	}
	e.add(mParkedFiles, e.labels(), uval(uint64(n)))
}
