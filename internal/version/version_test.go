package version

import (
	"regexp"
	"runtime/debug"
	"testing"
)

// The version must be a valid Debian version, since the .deb takes it as
// is: start with a digit, then only [0-9A-Za-z.+~-].
var debianVersion = regexp.MustCompile(`^[0-9][0-9A-Za-z.+~-]*$`)

func TestString_IsADebianVersionStartingWithBase(t *testing.T) {
	got := String()
	if !debianVersion.MatchString(got) {
		t.Fatalf("String() = %q: not a Debian version", got)
	}
	if len(got) < len(Base) || got[:len(Base)] != Base {
		t.Fatalf("String() = %q does not start with Base %q", got, Base)
	}
}

func TestString_StampWins(t *testing.T) {
	old := stamp
	t.Cleanup(func() { stamp = old })
	stamp = "0.2.0+git.41.gabcdef123456"
	if got := String(); got != stamp {
		t.Fatalf("String() = %q, want the stamp %q", got, stamp)
	}
}

func TestVCSSuffix(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []debug.BuildSetting
		want string
	}{
		{"no vcs information", nil, ""},
		{"clean", []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "false"}}, ".g0123456789ab"},
		{"dirty", []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}, ".g0123456789ab.dirty"},
		{"short revision", []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}, ".gabc"},
	} {
		if got := vcsSuffix(tc.in); got != tc.want {
			t.Errorf("%s: vcsSuffix = %q, want %q", tc.name, got, tc.want)
		}
	}
}
