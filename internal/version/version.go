package version

import (
	"runtime/debug"
	"strings"
)

// Base is the release this tree is, or is heading for. It is bumped in the
// commit that is tagged v<Base>; a build from any other commit carries a
// suffix saying which (scripts/version), so two different builds never
// print the same version.
const Base = "0.2.0"

// stamp is the full version of a build made by `make build`, set with
// -ldflags "-X github.com/nichealth/nichealthd/internal/version.stamp=...".
var stamp string

// String returns the version of this binary:
//   - a build by `make build` or the .deb: the stamp scripts/version
//     computed (Base, plus "+git.<commits>.g<hash>[.dirty]" off a release tag);
//   - a plain `go build` in a git checkout: Base+"+dev.g<hash>[.dirty]" from
//     the build information the Go toolchain records;
//   - anything else (no VCS information): Base+"+dev".
func String() string {
	if stamp != "" {
		return stamp
	}
	return Base + "+dev" + vcsSuffix(readSettings())
}

func readSettings() []debug.BuildSetting {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return bi.Settings
}

// vcsSuffix renders the revision the toolchain recorded as ".g<hash>"
// (12 hex digits, as git describe abbreviates) and ".dirty" for a tree with
// uncommitted changes.
func vcsSuffix(settings []debug.BuildSetting) string {
	var rev string
	var dirty bool
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString(".g")
	b.WriteString(rev[:min(12, len(rev))])
	if dirty {
		b.WriteString(".dirty")
	}
	return b.String()
}
