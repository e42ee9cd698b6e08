package fabricentry

import (
	"bytes"
	"encoding/json"
	"testing"
)

// wholePlan is a whole plan as nichealth-fabric plan --json wrote it
// before its shape was declared here (DESIGN.md section 14): a host with
// a list, a host that reads nothing, and two unassigned ports, the second
// of a switch the dump gave no LID (switchLID left out).
const wholePlan = `{
  "assignments": {
    "gpu-a017": [
      {
        "switchGUID": "0xec0d9a0300ec8200",
        "port": 8,
        "switchName": "SwitchIB Mellanox Technologies",
        "switchLID": 25
      }
    ],
    "gpu-a018": []
  },
  "unassigned": [
    {
      "switchGUID": "0xec0d9a0300f548c0",
      "port": 255,
      "switchName": "SwitchIB Mellanox Technologies",
      "switchLID": 29,
      "reason": "port 255 outside 1..254 (a switch's external ports): no daemon reads it"
    },
    {
      "switchGUID": "0xec0d9a0300f548c8",
      "port": 3,
      "switchName": "ibsw-spine2",
      "reason": "no switchLID, the LID its PMA answers at: no daemon reads it"
    }
  ]
}
`

func encode(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func decode(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%v\n%s", err, s)
	}
}

// TestDesign_14_FileShapeAsThePlanWroteIt: a file today's plan wrote
// decodes to the values it holds, and the same values encode to the same
// bytes: the keys, their order, switchLID left out at 0, an empty list as
// []. (nichealth-fabric's TestDesign_14_PlanFilesByteForByte holds the
// files plan writes, one host's among them, to the bytes it wrote.)
func TestDesign_14_FileShapeAsThePlanWroteIt(t *testing.T) {
	var p Plan
	decode(t, wholePlan, &p)
	l := p.Assignments["gpu-a017"]
	if len(p.Assignments) != 2 || len(l) != 1 || p.Assignments["gpu-a018"] == nil || len(p.Assignments["gpu-a018"]) != 0 {
		t.Fatalf("assignments %+v", p.Assignments)
	}
	e := l[0]
	if e.SwitchGUID == nil || *e.SwitchGUID != "0xec0d9a0300ec8200" || e.Port == nil || *e.Port != 8 ||
		e.SwitchName != "SwitchIB Mellanox Technologies" || e.SwitchLID == nil || *e.SwitchLID != 25 {
		t.Errorf("entry %+v", e)
	}
	if len(p.Unassigned) != 2 || *p.Unassigned[0].Port != 255 || *p.Unassigned[0].SwitchLID != 29 ||
		p.Unassigned[0].Reason != "port 255 outside 1..254 (a switch's external ports): no daemon reads it" ||
		p.Unassigned[1].SwitchLID != nil || p.Unassigned[1].SwitchName != "ibsw-spine2" {
		t.Errorf("unassigned %+v", p.Unassigned)
	}
	if got := encode(t, p); got != wholePlan {
		t.Errorf("the whole plan encodes as\n%s\nwant\n%s", got, wholePlan)
	}

	// A daemon reads a whole plan as a host's file: the unassigned list
	// is no host's.
	var f File
	decode(t, wholePlan, &f)
	if len(f.Assignments) != 2 || *f.Assignments["gpu-a017"][0].Port != 8 {
		t.Errorf("a whole plan read as a file: %+v", f)
	}
	if b, err := json.Marshal(File{Assignments: map[string][]Entry{"gpu-a018": {}}}); err != nil || string(b) != `{"assignments":{"gpu-a018":[]}}` {
		t.Errorf("a host's file that reads nothing encodes as %s %v", b, err)
	}
}

// TestDesign_14_NewEntryIsWhatThePlanWrites: the entry a plan makes
// encodes as its file holds it, switchLID left out when the inputs gave
// none.
func TestDesign_14_NewEntryIsWhatThePlanWrites(t *testing.T) {
	for _, tc := range []struct {
		e    Entry
		want string
	}{
		{NewEntry("0xec0d9a0300ec8200", 8, "SwitchIB Mellanox Technologies", 25),
			`{"switchGUID":"0xec0d9a0300ec8200","port":8,"switchName":"SwitchIB Mellanox Technologies","switchLID":25}`},
		{NewEntry("0x0000000000000001", 3, "", 0), `{"switchGUID":"0x0000000000000001","port":3,"switchName":""}`},
	} {
		b, err := json.Marshal(tc.e)
		if err != nil || string(b) != tc.want {
			t.Errorf("%s %v, want %s", b, err, tc.want)
		}
	}
}

// TestDesign_14_MissingKeyIsNotZero: a key left out or null decodes to
// nil, a zero to a zero, so a daemon says "no port" for the one and
// "port 0 outside 1..254" for the other.
func TestDesign_14_MissingKeyIsNotZero(t *testing.T) {
	var missing, null, zero Entry
	decode(t, `{}`, &missing)
	decode(t, `{"switchGUID": null, "port": null, "switchLID": null}`, &null)
	decode(t, `{"switchGUID": "", "port": 0, "switchLID": 0}`, &zero)
	for name, e := range map[string]Entry{"left out": missing, "null": null} {
		if e.SwitchGUID != nil || e.Port != nil || e.SwitchLID != nil {
			t.Errorf("%s: %+v, want no keys", name, e)
		}
	}
	if zero.SwitchGUID == nil || *zero.SwitchGUID != "" || zero.Port == nil || *zero.Port != 0 || zero.SwitchLID == nil || *zero.SwitchLID != 0 {
		t.Errorf("zeros: %+v, want each key present at zero", zero)
	}
}
