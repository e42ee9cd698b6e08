package debian

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/internal/version"
)

// A statically linked binary carries every module it imports: the
// copyright file must name each one, or the package ships code whose
// licence it does not state.
func TestCopyright_NamesEveryLinkedModule(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", "../../cmd/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	b, err := os.ReadFile("copyright")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	seen := map[string]bool{}
	for _, m := range strings.Fields(string(out)) {
		if m == "github.com/nichealth/nichealthd" || seen[m] {
			continue
		}
		seen[m] = true
		if !strings.Contains(text, "go-modules/"+m+"/*") {
			t.Errorf("packaging/debian/copyright has no stanza for module %s (add Files: go-modules/%s/* with its copyright and licence)", m, m)
		}
	}
	if len(seen) == 0 {
		t.Fatal("go list named no modules; the test would pass vacuously")
	}
}

// Every licence a Files stanza names has its text: inline right under
// the stanza, or in a standalone License paragraph.
func TestCopyright_EveryLicenceHasItsText(t *testing.T) {
	f, err := os.Open("copyright")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	used, texts := map[string]bool{}, map[string]bool{}
	var inFiles bool
	var lic string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			inFiles, lic = false, ""
		case strings.HasPrefix(line, "Files:"):
			inFiles = true
		case strings.HasPrefix(line, "License:"):
			lic = strings.TrimSpace(strings.TrimPrefix(line, "License:"))
			if inFiles {
				used[lic] = true
			}
		case strings.HasPrefix(line, " ") && lic != "":
			texts[lic] = true
		}
	}
	for l := range used {
		if !texts[l] {
			t.Errorf("licence %q is used but its text is not in packaging/debian/copyright", l)
		}
	}
}

var entry = regexp.MustCompile(`^nichealthd \(([^)]+)\) [a-z]+; urgency=[a-z]+$`)

// The package's changelog opens with the release the tree is: the .deb of
// a release build and the binaries' --version must agree with it.
func TestChangelog_NewestEntryIsTheBaseVersion(t *testing.T) {
	b, err := os.ReadFile("changelog")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	m := entry.FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("first line %q is not a Debian changelog entry", first)
	}
	if m[1] != version.Base {
		t.Fatalf("changelog's newest entry is %s, internal/version.Base is %s: bump one to match the other", m[1], version.Base)
	}
}
