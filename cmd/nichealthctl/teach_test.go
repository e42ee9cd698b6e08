package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidate_40_11_ErrorsThatTeach: a new user's mistakes, as the built
// nichealthctl says them: refused (exit 1) with the file, the key, its
// line and what to write instead; --json carries the key and the line.
func TestValidate_40_11_ErrorsThatTeach(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "ib-node-name-map")
	for _, tc := range []struct {
		name, body, key string
		line            int
		want            []string
	}{
		{"metrics port out of range", "metricsAddress = \"127.0.0.1:99999\"\n", "metricsAddress", 1, []string{"1..65535"}},
		{"zero poll interval", "# every port\npollingInterval = \"0s\"\n", "pollingInterval", 2, []string{"0s is outside 10ms..1h", "default 1s"}},
		{"threshold in words", "[[counterDetection.counters]]\nname = \"symbol_error\"\nthreshold = \"ten\"\n", "counterDetection.counters[0].threshold", 3,
			[]string{`"ten" is not a number`, "threshold = 10"}},
		{"misspelt counter", "[[counterDetection.counters]]\nname = \"symbol_eror\"\nthreshold = 10\n", "counterDetection.counters[0].name", 2,
			[]string{"unknown counter", "did you mean symbol_error"}},
		{"missing node-name map", "[farEnd]\nnodeNameMap = \"" + missing + "\"\n", "farEnd.nodeNameMap", 2, []string{"does not exist"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "config.toml")
			if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			out, errs, code := ctl(t, nil, nil, "validate", p)
			if code != exitFailed || out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
			}
			want := "nichealthctl validate: " + p + ": " + tc.key + ": line "
			if !strings.HasPrefix(errs, want) {
				t.Fatalf("stderr %q, want prefix %q", errs, want)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr %q lacks %q", errs, w)
				}
			}
			if strings.Contains(errs, "struct field") || strings.Contains(errs, "path is required") {
				t.Errorf("stderr %q speaks the decoder's words", errs)
			}
			out, _, code = ctl(t, nil, nil, "validate", "--json", p)
			var v validateJSON
			if err := json.Unmarshal([]byte(out), &v); err != nil || code != exitFailed || v.Valid || v.Key != tc.key || v.Line != tc.line {
				t.Fatalf("--json: exit %d %+v %v", code, v, err)
			}
		})
	}
}
