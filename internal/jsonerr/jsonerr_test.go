package jsonerr

import (
	"encoding/json"
	"strings"
	"testing"
)

type entry struct {
	GUID *string  `json:"switchGUID"`
	Port int      `json:"port"`
	On   bool     `json:"on"`
	Rate float64  `json:"rate"`
	Tags []string `json:"tags"`
}

type file struct {
	Hosts map[string][]entry `json:"hosts"`
	Any   any                `json:"any"`
}

// Each refusal names the line, the key path and the JSON kinds found and
// wanted, and no Go type.
func TestDescribe_SpeaksJSON(t *testing.T) {
	for name, c := range map[string]struct{ in, want string }{
		"number for a string":    {"{\"hosts\": {\"a\": [\n{\"switchGUID\": 12}]}}", "line 2: hosts.switchGUID: a number where a string belongs"},
		"string for a number":    {"{\"hosts\": {\"a\": [\n\n{\"port\": \"3\"}]}}", "line 3: hosts.port: a string where a number belongs"},
		"string for a bool":      {`{"hosts": {"a": [{"on": "yes"}]}}`, "line 1: hosts.on: a string where true or false belongs"},
		"bool for a float":       {`{"hosts": {"a": [{"rate": true}]}}`, "hosts.rate: a bool where a number belongs"},
		"object for a list":      {`{"hosts": {"a": {}}}`, "line 1: hosts: an object where a list belongs"},
		"list for an object":     {`{"hosts": []}`, "hosts: a list where an object belongs"},
		"number for a list":      {`{"hosts": {"a": [{"tags": 5}]}}`, "hosts.tags: a number where a list belongs"},
		"top level":              {`[1]`, "line 1: the top level: a list where an object belongs"},
		"syntax on line 3":       {"{\n\"hosts\":\n {,}}", "line 3: invalid character ',' looking for beginning of object key string"},
		"error at the last byte": {`{"hosts":}`, "line 1: invalid character '}' looking for beginning of value"},
		"ends early":             {`{"hosts": {"a": [`, "the file ends before the JSON does"},
		"empty":                  {``, "the file ends before the JSON does"},
		"out of range":           {`{"hosts": {"a": [{"port": 1e999}]}}`, "line 1: hosts.port: 1e999 does not fit: a whole number in range belongs"},
		"not whole":              {`{"hosts": {"a": [{"port": 3.5}]}}`, "hosts.port: 3.5 does not fit"},
	} {
		var f file
		err := json.Unmarshal([]byte(c.in), &f)
		if err == nil {
			t.Fatalf("%s: decoded", name)
		}
		got := Describe([]byte(c.in), err)
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: %q\nwant %q", name, got, c.want)
		}
		for _, goName := range []string{"Go ", "jsonerr.", "*string", "[]", "map[", "json: "} {
			if strings.Contains(got, goName) {
				t.Errorf("%s: %q names a Go type or the decoder (%q)", name, got, goName)
			}
		}
	}
}

// A decoder's streaming refusals (Decoder.Decode) read the same way.
func TestDescribe_Decoder(t *testing.T) {
	in := "{\"hosts\": {\"a\": [\n{\"port\": \"x\"}]}}"
	var f file
	err := json.NewDecoder(strings.NewReader(in)).Decode(&f)
	if got := Describe([]byte(in), err); got != "line 2: hosts.port: a string where a number belongs" {
		t.Fatalf("%q", got)
	}
	if got := Describe(nil, json.NewDecoder(strings.NewReader("")).Decode(&f)); !strings.Contains(got, "ends before") {
		t.Fatalf("%q", got)
	}
}

func FuzzDescribe(f *testing.F) {
	f.Add([]byte(`{"hosts": {"a": [{"port": "3"}]}}`))
	f.Add([]byte("{\n\"hosts\":\n {,}}"))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var v file
		if err := json.Unmarshal(b, &v); err != nil {
			if Describe(b, err) == "" {
				t.Fatalf("no words for %v", err)
			}
		}
	})
}
