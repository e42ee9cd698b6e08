package event

import (
	"testing"
	"time"
	"unicode/utf8"
)

func TestEvent_9_CleanEscapesInvalidBytesAndNUL(t *testing.T) {
	for in, want := range map[string]string{
		"ACTIVE":        "ACTIVE",
		"4: ACT\xffIVE": `4: ACT\xffIVE`,
		"node\x00a":     `node\x00a`,
		"Ünïcødé":       "Ünïcødé",
		"\xc3":          `\xc3`,
	} {
		if got := Clean(in); got != want {
			t.Errorf("Clean(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"", "a", "\xff", "\x00", "é", "\xe2\x82"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := Clean(s)
		if !utf8.ValidString(c) {
			t.Fatalf("Clean(%q) = %q is not valid UTF-8", s, c)
		}
		for i := 0; i < len(c); i++ {
			if c[i] == 0 {
				t.Fatalf("Clean(%q) kept a NUL", s)
			}
		}
		if utf8.ValidString(s) && !containsNUL(s) && c != s {
			t.Fatalf("Clean changed valid text %q to %q", s, c)
		}
	})
}

func containsNUL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

func TestEvent_9_NewCleansEveryString(t *testing.T) {
	e := New(Spec{Kind: KindPortFatal, CheckName: "C\xff", Message: "m\xfe", Device: "d\x00", Port: 1,
		ErrorCode: []string{"e\xff"}, Metadata: map[string]string{"k\xff": "v\xff"}}, Stamp{NodeName: "n\x00", Now: time.Now()})
	for _, s := range []string{e.CheckName, e.Message, e.NodeName, e.Device(), e.ErrorCode[0]} {
		if !utf8.ValidString(s) || containsNUL(s) {
			t.Errorf("%q left unclean", s)
		}
	}
	for k, v := range e.Metadata {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			t.Errorf("metadata %q=%q left unclean", k, v)
		}
	}
}
