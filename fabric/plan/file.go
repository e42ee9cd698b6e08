package plan

import "github.com/nichealth/nichealthd/internal/fabricentry"

// The plan is written in the assignment file's one JSON shape, which
// internal/fabricentry declares for the plan and the daemon alike: the
// plan's own types keep what planning needs (typed GUIDs, the rule that
// gave a port) and are turned into that shape here, at the edge.

// Entry is a as a host's list holds it.
func (a Assignment) Entry() fabricentry.Entry {
	return fabricentry.NewEntry(a.SwitchGUID.String(), a.Port, a.SwitchName, a.SwitchLID)
}

// Whole is p as nichealth-fabric plan --json prints it: every host's
// list and the unassigned ports.
func (p *Plan) Whole() fabricentry.Plan {
	w := fabricentry.Plan{File: fabricentry.File{Assignments: make(map[string][]fabricentry.Entry, len(p.Assignments))}}
	for h, l := range p.Assignments {
		w.Assignments[h] = entries(l)
	}
	if p.Unassigned != nil {
		w.Unassigned = make([]fabricentry.Unassigned, 0, len(p.Unassigned))
		for _, u := range p.Unassigned {
			w.Unassigned = append(w.Unassigned, fabricentry.Unassigned{Entry: u.Entry(), Reason: u.Reason})
		}
	}
	return w
}

// File is host h's file (nichealth-fabric plan -o DIR writes it to
// DIR/<h>.json): its list alone, in the same shape, so a daemon reads the
// file it was given and checks that it names its own host.
func (p *Plan) File(h string) fabricentry.File {
	return fabricentry.File{Assignments: map[string][]fabricentry.Entry{h: entries(p.Assignments[h])}}
}

// entries is l in the file's shape; an empty list stays a list ([], not
// null: the host reads nothing in this job).
func entries(l []Assignment) []fabricentry.Entry {
	if l == nil {
		return nil
	}
	out := make([]fabricentry.Entry, 0, len(l))
	for _, a := range l {
		out = append(out, a.Entry())
	}
	return out
}
