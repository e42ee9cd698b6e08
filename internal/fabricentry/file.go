package fabricentry

// The assignment file's JSON (DESIGN.md section 14), declared here once:
// nichealth-fabric plan encodes these types, the daemon decodes them, and
// the tests read the plan's output through them, so a key renamed on one
// side is renamed on every side.
//
// One host's file (plan -o DIR writes DIR/<host>.json) is a File:
//
//	{"assignments": {"<host>": [{"switchGUID": "0x…", "port": N, "switchName": "…", "switchLID": L}]}}
//
// A whole plan (plan --json) is a Plan: the same, and the ports no host
// reads with the reason.
//
//	{"assignments": {...}, "unassigned": [{"switchGUID": …, "reason": "…"}]}

// Entry is one switch port in a host's list.
//
// The keys a daemon cannot do without are pointers: a daemon tells a key
// left out (or null), which it refuses as "no port", from a value it
// refuses for itself ("port 0 outside 1..254"); plain fields would read
// both as the zero value. A writer fills an Entry with NewEntry.
type Entry struct {
	// SwitchGUID is the switch's node GUID: 0x and 16 hex digits as the
	// plan writes it (a daemon also takes fewer digits and either case).
	SwitchGUID *string `json:"switchGUID"`
	Port       *int    `json:"port"`
	// SwitchName is the node-name map's name or the NodeDescription; a
	// daemon names the switch by its GUID when it is empty.
	SwitchName string `json:"switchName"`
	// SwitchLID is the switch's port 0 LID, where its PMA answers. It is
	// left out when the plan's inputs gave none; only an unassigned port
	// lacks one, as a daemon refuses such an entry.
	SwitchLID *int `json:"switchLID,omitempty"`
}

// NewEntry is the entry a plan writes for switch port port of the switch
// guid, named name, at LID lid (0: the inputs gave none, and the key is
// left out).
func NewEntry(guid string, port int, name string, lid int) Entry {
	e := Entry{SwitchGUID: &guid, Port: &port, SwitchName: name}
	if lid != 0 {
		e.SwitchLID = &lid
	}
	return e
}

// File is one host's assignment file, and what a daemon reads of a whole
// plan: its "unassigned" list is no host's to read.
type File struct {
	Assignments map[string][]Entry `json:"assignments"`
}

// Plan is a whole job's plan: every host's list, and the ports on the
// job's paths that no host reads.
type Plan struct {
	File
	Unassigned []Unassigned `json:"unassigned"`
}

// Unassigned is a port no host of the job reads, and why.
type Unassigned struct {
	Entry
	Reason string `json:"reason"`
}
