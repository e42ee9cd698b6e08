package fabricshare

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nichealth/nichealthd/internal/fabricentry"
	"github.com/nichealth/nichealthd/internal/jsonerr"
	"github.com/nichealth/nichealthd/mad/wire"
)

// Bounds on an assignment file. What one entry may hold, and how many
// one host reads, is internal/fabricentry's: nichealth-fabric plan writes
// by the same definition.
const (
	MaxPorts = fabricentry.MaxPorts
	// MaxFileBytes holds a whole job's plan (--json, every host's list):
	// a pretty-printed entry is about 150 bytes.
	MaxFileBytes = 16 << 20
)

// Entry is one switch port this host reads.
type Entry struct {
	// SwitchGUID is the switch's node GUID as the protocol writes it (0x
	// and 16 lower-case hex digits).
	SwitchGUID string
	SwitchName string
	// SwitchLID is the switch's port 0 LID: where its PMA answers.
	SwitchLID int
	Port      int
}

// Parse validates an assignment file and returns the list of host: its
// entry in "assignments" (host names compare by their first label,
// case-insensitively, as hostname -s and a Slurm node list write them).
// A file that names only other hosts is refused: it was dropped on the
// wrong node, and reading it would read another host's share twice and
// leave this host's unread. The list comes back sorted by switch and
// port.
func Parse(b []byte, host string) ([]Entry, error) {
	if len(b) > MaxFileBytes {
		return nil, fmt.Errorf("%d bytes exceed the %d an assignment may hold", len(b), MaxFileBytes)
	}
	if !utf8.Valid(b) {
		return nil, errors.New("not valid UTF-8: not a file nichealth-fabric plan wrote")
	}
	d := json.NewDecoder(bytes.NewReader(b))
	// The file's shape is fabricentry's, the one the plan writes. A whole
	// plan (--json) parses too: its "unassigned" list is no host's to
	// read, and File leaves it out.
	var f fabricentry.File
	if err := d.Decode(&f); err != nil {
		return nil, fmt.Errorf("not the JSON nichealth-fabric plan writes ({\"assignments\": {\"<host>\": [...]}}): %s", jsonerr.Describe(b, err))
	}
	if d.More() {
		return nil, errors.New("trailing data after the JSON object: a half-written or concatenated file")
	}
	if f.Assignments == nil {
		return nil, errors.New("no \"assignments\" object: not a file nichealth-fabric plan wrote")
	}
	want := firstLabel(host)
	if want == "" {
		return nil, errors.New("this host has no name to look up in the file: set [fabric] host")
	}
	var list []fabricentry.Entry
	found := false
	names := make([]string, 0, len(f.Assignments))
	for h, l := range f.Assignments {
		names = append(names, h)
		if strings.EqualFold(firstLabel(h), want) {
			if found {
				return nil, fmt.Errorf("host %q is listed twice (under two spellings)", want)
			}
			list, found = l, true
		}
	}
	if !found {
		slices.Sort(names)
		if len(names) > 3 {
			names = append(names[:3], "…")
		}
		return nil, fmt.Errorf("the file assigns ports to %s, not to this host %q: drop this host's own file (nichealth-fabric plan -o DIR writes DIR/%s.json)",
			clip(strings.Join(names, ", ")), want, want)
	}
	if len(list) > MaxPorts {
		return nil, fmt.Errorf("%d ports assigned to %s, more than the %d one host reads: plan the job over more hosts", len(list), want, MaxPorts)
	}
	out := make([]Entry, 0, len(list))
	type sp struct {
		guid string
		port int
	}
	seen := make(map[sp]int, len(list))
	lids := map[string]int{}
	for i, fe := range list {
		e, err := entry(fe)
		if err != nil {
			return nil, fmt.Errorf("%s entry %d: %v", want, i+1, err)
		}
		k := sp{e.SwitchGUID, e.Port}
		if j, dup := seen[k]; dup {
			return nil, fmt.Errorf("%s entry %d: switch %s port %d is listed twice (entries %d and %d)", want, i+1, e.SwitchGUID, e.Port, j+1, i+1)
		}
		seen[k] = i
		if l, ok := lids[e.SwitchGUID]; ok && l != e.SwitchLID {
			return nil, fmt.Errorf("%s entry %d: switch %s has LID %d here and %d in an earlier entry: re-run nichealth-fabric plan on one dump", want, i+1, e.SwitchGUID, e.SwitchLID, l)
		}
		lids[e.SwitchGUID] = e.SwitchLID
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int {
		if c := strings.Compare(a.SwitchGUID, b.SwitchGUID); c != 0 {
			return c
		}
		return a.Port - b.Port
	})
	return out, nil
}

// entry validates fe, telling a key left out (nil) from a value refused.
func entry(fe fabricentry.Entry) (Entry, error) {
	if fe.SwitchGUID == nil {
		return Entry{}, errors.New("no switchGUID")
	}
	g, err := parseGUID(*fe.SwitchGUID)
	if err != nil {
		return Entry{}, err
	}
	if fe.Port == nil {
		return Entry{}, fmt.Errorf("switch %s: no port", g)
	}
	if why := fabricentry.Port(*fe.Port); why != "" {
		return Entry{}, fmt.Errorf("switch %s: %s", g, why)
	}
	if fe.SwitchLID == nil || *fe.SwitchLID == 0 {
		return Entry{}, fmt.Errorf("switch %s port %d: no switchLID, the LID its PMA answers at: re-run nichealth-fabric plan (this release writes it) on an ibnetdiscover dump taken with LIDs assigned", g, *fe.Port)
	}
	if why := fabricentry.LID(*fe.SwitchLID); why != "" {
		return Entry{}, fmt.Errorf("switch %s port %d: %s", g, *fe.Port, why)
	}
	name := fe.SwitchName
	if why := fabricentry.Name(name); why != "" {
		return Entry{}, fmt.Errorf("switch %s port %d: %s (%q)", g, *fe.Port, why, clip(name))
	}
	if name == "" {
		name = g
	}
	return Entry{SwitchGUID: g, SwitchName: name, SwitchLID: *fe.SwitchLID, Port: *fe.Port}, nil
}

// parseGUID reads a GUID as the plan writes it (0x and up to 16 hex
// digits, either case) into the protocol's form.
func parseGUID(s string) (string, error) {
	h, ok := strings.CutPrefix(strings.ToLower(s), "0x")
	if !ok || len(h) == 0 || len(h) > 16 {
		return "", fmt.Errorf("switchGUID %q is not 0x and up to 16 hex digits", clip(s))
	}
	v, err := strconv.ParseUint(h, 16, 64)
	if err != nil || v == 0 {
		return "", fmt.Errorf("switchGUID %q is not 0x and up to 16 hex digits (or is zero)", clip(s))
	}
	return wire.FormatGUID(v), nil
}

// firstLabel is the name h's entries are listed under, blanks around it
// aside.
func firstLabel(h string) string { return fabricentry.ShortHost(strings.TrimSpace(h)) }

// clip bounds a value quoted in a message.
func clip(s string) string {
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
