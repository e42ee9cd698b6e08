package rules

import "github.com/nichealth/nichealthd/topology/sysfs"

// linkOf is the reading a poll makes of a port whose logical state sysfs
// names state: an ACTIVE port is LinkUp, a DOWN one Disabled, INIT and
// ARMED LinkUp; "" is a port that was not read. A name no kernel prints
// (the fuzzers' "POLLING") is a known state that is neither up nor down.
func linkOf(state string) sysfs.Link {
	if state == "" {
		return sysfs.Link{}
	}
	s, err := sysfs.ParseState([]byte(state))
	if err != nil {
		return sysfs.Link{State: sysfs.PortState{ID: 99, Name: state}}
	}
	phys := "5: LinkUp"
	if s.ID == sysfs.StateDown {
		phys = "3: Disabled"
	}
	p, _ := sysfs.ParsePhysState([]byte(phys))
	return sysfs.Link{State: s, Phys: p}
}
