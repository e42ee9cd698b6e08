// Command version prints the version `make build` stamps into every binary
// and the .deb takes as its package version: internal/version.Base on the
// commit tagged v<Base> with a clean tree, and otherwise
// Base+"+git.<commits>.g<hash>[.dirty]", which sorts after the release in
// Debian's ordering and names the exact commit. Outside a git checkout (a
// source tarball) it prints Base.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/nichealth/nichealthd/internal/version"
)

func main() {
	fmt.Println(describe(git))
}

func git(args ...string) (string, error) {
	out, err := exec.Command("git", args...).Output()
	return strings.TrimSpace(string(out)), err
}

// describe builds the version from what git says; run is git.
func describe(run func(args ...string) (string, error)) string {
	hash, err := run("rev-parse", "--short=12", "HEAD")
	if err != nil || hash == "" {
		return version.Base
	}
	dirty := ""
	if st, err := run("status", "--porcelain", "--untracked-files=no"); err == nil && st != "" {
		dirty = ".dirty"
	}
	if tags, err := run("tag", "--points-at", "HEAD"); err == nil && dirty == "" {
		for _, t := range strings.Fields(tags) {
			if t == "v"+version.Base {
				return version.Base
			}
		}
	}
	count, err := run("rev-list", "--count", "HEAD")
	if err != nil {
		fmt.Fprintln(os.Stderr, "version: git rev-list:", err)
		count = "0"
	}
	return fmt.Sprintf("%s+git.%s.g%s%s", version.Base, count, hash, dirty)
}
