package config

import (
	"strings"
	"testing"
)

// Issue 22 rows 3 and 11 and what it saw besides: values validation used
// to accept although they break the daemon quietly. A description of
// 200 KB made every event of its counter too large to store; a check
// list of one blank name switched every port check off; a relative or
// NUL-containing JSON-lines path writes where nobody looks.
func TestBounded_ValidationRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, doc, key, reason string
	}{
		{"3_DescriptionAbove1KiB", "[[counterDetection.counters]]\nname = \"symbol_error\"\ndescription = \"" + strings.Repeat("<", 200_000) + "\"",
			"counterDetection.counters[0].description", "limit of 1024"},
		{"11_BlankCheckName", "checks = [\" \"]", "checks", "empty check name"},
		{"11_BlankAmongKnown", "checks = [\"InfiniBandStateCheck\", \"\"]", "checks", "empty check name"},
		{"AlsoSeen_JSONLRelativePath", "[sinks.jsonl]\npath = \"events.jsonl\"", "sinks.jsonl.path", "absolute path"},
		{"AlsoSeen_JSONLPathNUL", "[sinks.jsonl]\npath = \"/var/log/ev\\u0000ents.jsonl\"", "sinks.jsonl.path", "NUL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("/etc/nichealthd/config.toml", []byte(tc.doc))
			if err == nil {
				t.Fatalf("accepted")
			}
			if msg := err.Error(); !strings.Contains(msg, tc.key) || !strings.Contains(msg, tc.reason) {
				t.Fatalf("message %q: want key %q and %q", msg, tc.key, tc.reason)
			}
		})
	}
	// What stays accepted: a description at the limit, stdout, and a list
	// with surrounding blanks on a known name.
	if _, err := Parse("c.toml", []byte("checks = [\" InfiniBandStateCheck \"]\n[sinks.jsonl]\npath = \"-\"\n[[counterDetection.counters]]\nname = \"symbol_error\"\ndescription = \""+
		strings.Repeat("d", 1024)+"\"")); err != nil {
		t.Fatal(err)
	}
}
