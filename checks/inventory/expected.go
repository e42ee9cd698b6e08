package inventory

import (
	"fmt"
	"sort"

	"github.com/nichealth/nichealthd/topology"
)

// ExpectedVersion is the version of the expected-inventory file this
// build writes.
const ExpectedVersion = 1

// Expected is the inventory that outlives reboots: every function judged
// as a compute or storage NIC, by PCI address. Seed 6.5 clears the state
// at a reboot because the node may have come back with other hardware;
// this is what lets the daemon tell "other hardware" (acknowledged once)
// from "hardware missing" (fatal until it returns).
type Expected struct {
	Version   int                         `json:"version"`
	Functions map[string]ExpectedFunction `json:"functions"`
}

// ExpectedFunction is what was known of one function when it was last
// seen: enough to name it in an event after it is gone, and to recognise
// it at another address (serial number, node GUID).
type ExpectedFunction struct {
	Device    string `json:"device,omitempty"` // RDMA device name it had
	Role      string `json:"role"`
	Reason    string `json:"reason,omitempty"` // why it has its role
	GPUs      string `json:"gpus,omitempty"`   // the GPUs behind it
	LinkLayer string `json:"linkLayer,omitempty"`
	Serial    string `json:"serial,omitempty"`
	NodeGUID  string `json:"nodeGUID,omitempty"`
	// BoardID is the PSID (the card model) the slot held when its RDMA
	// device was last seen. SwappedFrom is the PSID it held before, when
	// that changed under SwappedBoot (a swapped card: a finding for that
	// boot, DESIGN.md difference 20); both "" otherwise.
	BoardID     string `json:"boardID,omitempty"`
	SwappedFrom string `json:"swappedFrom,omitempty"`
	SwappedBoot string `json:"swappedBoot,omitempty"`
	// Boot is the boot ID under which it was last seen on the bus.
	Boot string `json:"boot,omitempty"`
}

// Swapped is the PSID the slot at addr held before its card of this boot,
// when the card was swapped for another model this boot ("" otherwise).
func (e *Expected) Swapped(addr, boot string) string {
	f := e.Functions[addr]
	if f.SwappedBoot != boot || boot == "" || f.SwappedFrom == f.BoardID {
		return ""
	}
	return f.SwappedFrom
}

// NewExpected returns an empty expected inventory.
func NewExpected() *Expected {
	return &Expected{Version: ExpectedVersion, Functions: map[string]ExpectedFunction{}}
}

// maxExpected bounds the file: a node has tens of NIC functions, and a
// file that claims thousands was not written by this daemon.
const maxExpected = 4096

// Validate drops entries this daemon could not have written and lists
// them; a version newer than this build's is refused by the caller before.
func (e *Expected) Validate() (dropped []string) {
	e.Version = ExpectedVersion
	if e.Functions == nil {
		e.Functions = map[string]ExpectedFunction{}
	}
	for addr, f := range e.Functions {
		switch {
		case !topology.IsPCIAddress(addr):
			dropped = append(dropped, fmt.Sprintf("functions[%q]: not a PCI address", addr))
			delete(e.Functions, addr)
		case f.Role != string(topology.RoleCompute) && f.Role != string(topology.RoleStorage):
			dropped = append(dropped, fmt.Sprintf("functions[%q]: role %q is not Compute or Storage", addr, f.Role))
			delete(e.Functions, addr)
		case f.Device != "" && !topology.ValidDeviceName(f.Device):
			dropped = append(dropped, fmt.Sprintf("functions[%q]: device %q is not a device name", addr, f.Device))
			delete(e.Functions, addr)
		}
	}
	if len(e.Functions) > maxExpected {
		addrs := make([]string, 0, len(e.Functions))
		for a := range e.Functions {
			addrs = append(addrs, a)
		}
		sort.Strings(addrs)
		for _, a := range addrs[maxExpected:] {
			delete(e.Functions, a)
		}
		dropped = append(dropped, fmt.Sprintf("functions: %d entries, more than %d; the rest dropped", len(addrs), maxExpected))
	}
	sort.Strings(dropped)
	return dropped
}

// Lookup returns what is expected at addr.
func (e *Expected) Lookup(addr string) (ExpectedFunction, bool) {
	f, ok := e.Functions[addr]
	return f, ok
}

// LastName is the RDMA device name addr had, "" when unknown.
func (e *Expected) LastName(addr string) string { return e.Functions[addr].Device }
