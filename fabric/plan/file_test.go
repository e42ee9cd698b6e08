package plan

import (
	"encoding/json"
	"testing"
)

// TestDesign_14_PlanInTheFilesShape: the plan as the file holds it, key
// by key (internal/fabricentry's shape): every host's list, an empty one
// as [], the unassigned ports with their reasons, switchLID left out for
// the switch the dump gave none, and one host's file holding its list
// alone.
func TestDesign_14_PlanInTheFilesShape(t *testing.T) {
	p := planPort255AndNoLID(t)
	for _, tc := range []struct {
		name string
		v    any
		want string
	}{
		{"the whole plan", p.Whole(), `{"assignments":{"h1":[{"switchGUID":"0x000000000000000a","port":1,"switchName":"sw","switchLID":1}],"h2":[],"h3":[]},` +
			`"unassigned":[{"switchGUID":"0x000000000000000a","port":255,"switchName":"sw","switchLID":1,"reason":"port 255 outside 1..254 (a switch's external ports): no daemon reads it"},` +
			`{"switchGUID":"0x000000000000000c","port":1,"switchName":"nolid","reason":"no switchLID, the LID its PMA answers at: no daemon reads it"}]}`},
		{"h1's file", p.File("h1"), `{"assignments":{"h1":[{"switchGUID":"0x000000000000000a","port":1,"switchName":"sw","switchLID":1}]}}`},
		{"h2's file", p.File("h2"), `{"assignments":{"h2":[]}}`},
	} {
		b, err := json.Marshal(tc.v)
		if err != nil || string(b) != tc.want {
			t.Errorf("%s: %s %v\nwant %s", tc.name, b, err, tc.want)
		}
	}
}
