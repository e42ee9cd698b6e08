package connector

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// Whatever the operator puts in --platform-connector-socket, New either
// refuses it with a message or yields an absolute unix socket target.
func FuzzSocketPath(f *testing.F) {
	for _, s := range []string{DefaultTarget, "/run/x.sock", "unix:rel", "localhost:1", "", "unix://"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		p, err := socketPath(target)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
			t.Fatalf("socketPath(%q) = %q: not an absolute path", target, p)
		}
		// The target handed to gRPC must decode back to the same path.
		s, err := New(target, Options{NodeName: "n"})
		if err != nil {
			t.Fatalf("socketPath accepted %q but New refused it: %v", target, err)
		}
		u, err := url.Parse(s.Target())
		if err != nil || u.Scheme != "unix" || u.Host != "" || u.Path != p {
			t.Fatalf("target %q for path %q does not round-trip: %v %v", s.Target(), p, u, err)
		}
	})
}
