package sanity

import "github.com/nichealth/nichealthd/topology/sysfs"

// linkOf is a port read in the logical state sysfs prints as state, its
// physical link up; a state that does not parse is a port not read.
func linkOf(state string) sysfs.Link {
	s, err := sysfs.ParseState([]byte(state))
	if err != nil {
		return sysfs.Link{}
	}
	p, _ := sysfs.ParsePhysState([]byte("5: LinkUp"))
	return sysfs.Link{State: s, Phys: p}
}
