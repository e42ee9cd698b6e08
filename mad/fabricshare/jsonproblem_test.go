package fabricshare

import (
	"strings"
	"testing"
)

// A refused assignment file says, in the file's own terms, where and what:
// the line, the key path and the JSON kinds found and wanted, never the
// decoder's Go type names (the operator edits JSON, not our structs).
func TestParse_JSONRefusalsSpeakJSON(t *testing.T) {
	for name, c := range map[string]struct{ file, want string }{
		"GUID a number": {"{\"assignments\": {\"gpu-a017\": [\n  {\"switchGUID\": 12, \"port\": 1, \"switchLID\": 1}]}}",
			`line 2: assignments.switchGUID: a number where a string belongs`},
		"port a string": {"{\"assignments\": {\"gpu-a017\": [\n\n  {\"switchGUID\": \"0x1\", \"port\": \"3\", \"switchLID\": 1}]}}",
			`line 3: assignments.port: a string where a number belongs`},
		"list an object": {`{"assignments": {"gpu-a017": {}}}`, `line 1: assignments: an object where a list belongs`},
		"top a list":     {`[1]`, `line 1: the top level: a list where an object belongs`},
		"syntax":         {"{\"assignments\":\n {\"gpu-a017\": [}}", `line 2: invalid character '}' looking for beginning of value`},
		"truncated":      {`{"assignments": {"gpu-a017": [`, `the file ends before the JSON does`},
	} {
		_, err := Parse([]byte(c.file), "gpu-a017")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %q", name, err, c.want)
			continue
		}
		for _, goName := range []string{"Go ", "fabricentry", "*string", "[]", "map["} {
			if strings.Contains(strings.TrimPrefix(err.Error(), `not the JSON nichealth-fabric plan writes ({"assignments": {"<host>": [...]}})`), goName) {
				t.Errorf("%s: %v names a Go type (%q)", name, err, goName)
			}
		}
	}
}
