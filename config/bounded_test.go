package config

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/internal/hangfs"
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

// Issue 22 row 6: every reload started a read of its own while the
// configuration file's read hung (one blocked thread each: 300 SIGHUPs,
// 300 threads; about 10,000 ended in "fatal error: thread exhaustion").
// A pending read is joined, never multiplied, and the file is read again
// once it answers.
func TestBounded_6_PendingConfigReadReused(t *testing.T) {
	h := hangfs.Mount(t)
	p := filepath.Join(h.Dir, "config.toml")
	if err := os.WriteFile(p, []byte("pollingInterval = \"2s\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := Loader{Deadline: 20 * time.Millisecond}
	h.Hang(true, false)
	before := runtime.NumGoroutine()
	for i := 0; i < 50; i++ {
		if _, err := l.Load(p); err == nil || !strings.Contains(err.Error(), "no answer within") {
			t.Fatalf("load %d while the file hangs: %v", i, err)
		}
	}
	if n := h.Hung(); n != 1 {
		t.Fatalf("%d reads hang in the kernel after 50 loads, want 1", n)
	}
	if grew := runtime.NumGoroutine() - before; grew > 2 {
		t.Fatalf("%d more goroutines after 50 loads of a hung file", grew)
	}
	h.Release()
	if err := os.WriteFile(filepath.Join(h.Backing, "config.toml"), []byte("pollingInterval = \"3s\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := l.Load(p)
		if err == nil && c.PollInterval == 3*time.Second {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the release: %v %v", c, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
