package connector

import (
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
		if !filepath.IsAbs(p) || strings.Contains(p, "://") {
			t.Fatalf("socketPath(%q) = %q: not an absolute path", target, p)
		}
	})
}
