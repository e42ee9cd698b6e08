package fabricshare

import (
	"fmt"
	"strings"
	"testing"
)

const goodFile = `{
  "assignments": {
    "gpu-a017": [
      {"switchGUID": "0xb83fd20300a01000", "port": 33, "switchName": "ibsw-leaf1", "switchLID": 1},
      {"switchGUID": "0xB83FD20300A02000", "port": 34, "switchName": "ibsw-leaf2", "switchLID": 2},
      {"switchGUID": "0xb83fd20300a01000", "port": 17, "switchName": "ibsw-leaf1", "switchLID": 1}
    ]
  }
}`

func TestParse_TheHostsList(t *testing.T) {
	for _, host := range []string{"gpu-a017", "GPU-A017", "gpu-a017.cluster.example"} {
		got, err := Parse([]byte(goodFile), host)
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		want := []Entry{
			{SwitchGUID: "0xb83fd20300a01000", SwitchName: "ibsw-leaf1", SwitchLID: 1, Port: 17},
			{SwitchGUID: "0xb83fd20300a01000", SwitchName: "ibsw-leaf1", SwitchLID: 1, Port: 33},
			{SwitchGUID: "0xb83fd20300a02000", SwitchName: "ibsw-leaf2", SwitchLID: 2, Port: 34},
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: %+v, want %+v", host, got, want)
		}
	}
	// A whole plan (--json): this host's list out of every host's.
	whole := `{"assignments": {"gpu-a018": [{"switchGUID": "0x1", "port": 1, "switchLID": 3}],
		"gpu-a017.example": [{"switchGUID": "0x2", "port": 2, "switchLID": 4}]}, "unassigned": [{"switchGUID": "0x5", "port": 9, "reason": "x"}]}`
	got, err := Parse([]byte(whole), "gpu-a017")
	if err != nil || len(got) != 1 || got[0].SwitchGUID != "0x0000000000000002" || got[0].SwitchName != "0x0000000000000002" {
		t.Fatalf("whole plan: %+v %v", got, err)
	}
	// The unassigned list is no host's: whatever it holds, the host's
	// list is read.
	for _, un := range []string{`[]`, `null`, `5`, `[{"switchGUID": 5, "port": "x"}]`, `{"a": []}`} {
		if got, err := Parse([]byte(`{"assignments": {"gpu-a017": []}, "unassigned": `+un+`}`), "gpu-a017"); err != nil || len(got) != 0 {
			t.Errorf("unassigned %s: %v %v", un, got, err)
		}
	}
	// An empty list is a list: this host reads nothing in this job.
	if got, err := Parse([]byte(`{"assignments": {"gpu-a017": []}}`), "gpu-a017"); err != nil || len(got) != 0 {
		t.Fatalf("empty: %v %v", got, err)
	}
}

func TestParse_RefusesWithTheReason(t *testing.T) {
	entry := func(guid, port, lid string) string {
		return `{"assignments": {"gpu-a017": [{"switchGUID": ` + guid + `, "port": ` + port + `, "switchName": "leaf", "switchLID": ` + lid + `}]}}`
	}
	many := make([]string, 10_001)
	for i := range many {
		many[i] = fmt.Sprintf(`{"switchGUID": "0x%x", "port": 1, "switchLID": 1}`, i+1)
	}
	for name, c := range map[string]struct{ file, want string }{
		"not JSON":            {`assignments: gpu-a017`, "not the JSON nichealth-fabric plan writes"},
		"truncated":           {goodFile[:100], "not the JSON"},
		"concatenated":        {goodFile + goodFile, "trailing data"},
		"no assignments":      {`{"hosts": {}}`, `no "assignments"`},
		"list not an array":   {`{"assignments": {"gpu-a017": {}}}`, "not the JSON"},
		"other hosts only":    {`{"assignments": {"gpu-a018": []}}`, `to gpu-a018, not to this host "gpu-a017": drop this host's own file`},
		"host twice":          {`{"assignments": {"gpu-a017": [], "GPU-A017.x": []}}`, "listed twice"},
		"no GUID":             {`{"assignments": {"gpu-a017": [{"port": 1, "switchLID": 1}]}}`, "entry 1: no switchGUID"},
		"GUID not hex":        {entry(`"0xzz"`, "1", "1"), "not 0x and up to 16 hex digits"},
		"GUID too long":       {entry(`"0x11112222333344445"`, "1", "1"), "not 0x and up to 16 hex digits"},
		"GUID without 0x":     {entry(`"b83fd20300a01000"`, "1", "1"), "not 0x"},
		"GUID zero":           {entry(`"0x0"`, "1", "1"), "zero"},
		"GUID a number":       {entry(`12`, "1", "1"), "not the JSON"},
		"no port":             {`{"assignments": {"gpu-a017": [{"switchGUID": "0x1", "switchLID": 1}]}}`, "no port"},
		"port 0":              {entry(`"0x1"`, "0", "1"), "port 0 outside 1..254"},
		"port 255":            {entry(`"0x1"`, "255", "1"), "port 255 outside 1..254"},
		"no switchLID":        {`{"assignments": {"gpu-a017": [{"switchGUID": "0x1", "port": 3}]}}`, "no switchLID, the LID its PMA answers at: re-run nichealth-fabric plan"},
		"switchLID 0":         {entry(`"0x1"`, "3", "0"), "no switchLID"},
		"multicast LID":       {entry(`"0x1"`, "3", "49152"), "not a unicast LID"},
		"name with newline":   {`{"assignments": {"gpu-a017": [{"switchGUID": "0x1", "port": 3, "switchLID": 1, "switchName": "a\nb"}]}}`, "control characters"},
		"duplicate port":      {`{"assignments": {"gpu-a017": [{"switchGUID": "0x1", "port": 3, "switchLID": 1}, {"switchGUID": "0x01", "port": 3, "switchLID": 1}]}}`, "port 3 is listed twice (entries 1 and 2)"},
		"two LIDs a switch":   {`{"assignments": {"gpu-a017": [{"switchGUID": "0x1", "port": 3, "switchLID": 1}, {"switchGUID": "0x1", "port": 4, "switchLID": 2}]}}`, "has LID 2 here and 1"},
		"over 10,000 ports":   {`{"assignments": {"gpu-a017": [` + strings.Join(many, ",") + `]}}`, "10001 ports assigned to gpu-a017, more than the 10000"},
		"not UTF-8":           {"{\"assignments\": {\"gpu-a017\": [], \"\xff\": []}}", "UTF-8"},
		"over the size bound": {`{"assignments": {"gpu-a017": []}}` + strings.Repeat(" ", MaxFileBytes), "exceed"},
	} {
		_, err := Parse([]byte(c.file), "gpu-a017")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
	if _, err := Parse([]byte(goodFile), ""); err == nil || !strings.Contains(err.Error(), "[fabric] host") {
		t.Errorf("no host name: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(goodFile), "gpu-a017")
	f.Add([]byte(`{"assignments": {"gpu-a017": []}}`), "gpu-a017")
	f.Add([]byte(`{"assignments": {"a": [{"switchGUID": "0x1", "port": 3, "switchLID": 1}]}, "unassigned": []}`), "a.b")
	f.Add([]byte(`{"assignments": null}`), "x")
	f.Fuzz(func(t *testing.T, b []byte, host string) {
		list, err := Parse(b, host)
		if err != nil {
			if list != nil {
				t.Fatalf("a refusal returned a list: %v", list)
			}
			return
		}
		if len(list) > MaxPorts {
			t.Fatalf("%d ports past the bound", len(list))
		}
		seen := map[portKey]bool{}
		for i, e := range list {
			k := portKey{e.SwitchGUID, e.Port}
			if seen[k] || e.Port < 1 || e.Port > 254 || e.SwitchLID < 1 || e.SwitchLID > 0xBFFF || len(e.SwitchGUID) != 18 || e.SwitchName == "" {
				t.Fatalf("entry %d out of bounds or repeated: %+v", i, e)
			}
			seen[k] = true
			if i > 0 && (list[i-1].SwitchGUID > e.SwitchGUID || list[i-1].SwitchGUID == e.SwitchGUID && list[i-1].Port > e.Port) {
				t.Fatalf("list not sorted at %d", i)
			}
		}
	})
}
