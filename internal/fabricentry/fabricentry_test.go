package fabricentry

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// The numbers the plan and the daemon agree on, pinned as the IBTA
// specification gives them.
func TestDesign_14_SwitchPortAndLIDRange(t *testing.T) {
	for p, ok := range map[int]bool{0: false, 1: true, 36: true, 254: true, 255: false, -1: false, 256: false} {
		if got := Port(p) == ""; got != ok {
			t.Errorf("port %d accepted %v, want %v", p, got, ok)
		}
	}
	for l, ok := range map[int]bool{0: false, 1: true, 0xBFFF: true, 0xC000: false, -3: false} {
		if got := LID(l) == ""; got != ok {
			t.Errorf("LID %#x accepted %v, want %v", l, got, ok)
		}
	}
	if !strings.Contains(Port(255), "1..254") {
		t.Errorf("port 255 refused as %q, want the range named", Port(255))
	}
}

func TestDesign_14_CleanNameIsAccepted(t *testing.T) {
	for _, s := range []string{"ibsw-leaf1", "a\tb\nc\x7f", strings.Repeat("é", 200), strings.Repeat("x", 300), "\xff\xfe"} {
		c := CleanName(s)
		if why := Name(c); why != "" || !utf8.ValidString(c) {
			t.Errorf("CleanName(%q) = %q, refused: %s", s, c, why)
		}
	}
	if CleanName("ibsw-leaf1") != "ibsw-leaf1" {
		t.Error("a good name was changed")
	}
}

// TestShortHost_FirstLabel (DESIGN.md section 14): a host is listed under
// its first label, as hostname -s writes it.
func TestShortHost_FirstLabel(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"gpu-a017", "gpu-a017"},
		{"gpu-a017.cluster.example", "gpu-a017"},
		{"GPU-A017.example", "GPU-A017"},
		{".example", ""},
		{"", ""},
		{"node018.", "node018"},
	} {
		if got := ShortHost(tc.in); got != tc.want {
			t.Errorf("ShortHost(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
