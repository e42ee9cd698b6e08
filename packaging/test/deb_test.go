package packagingtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/internal/component"
)

// The .deb carries the fleet's Prometheus rules and Grafana dashboard
// under /usr/share/nichealthd (docs/fleet.md points there) and the udev
// rule that lets the daemon read the NICs' VPD, byte for byte as in the
// source tree, and the MAD helper with the libraries it needs.
func TestDeb_CarriesRulesDashboardAndUdevRule(t *testing.T) {
	for _, tool := range []string{"dpkg-deb", "dpkg", "go", "gzip"} {
		if _, err := exec.LookPath(tool); err != nil {
			component.Missing(t, "%s not installed (apt-get install dpkg)", tool)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	bin := filepath.Join(work, "bin")
	for _, h := range []string{"/usr/include/infiniband/umad.h", "/usr/include/infiniband/mad.h"} {
		if _, err := os.Stat(h); err != nil {
			component.Missing(t, "%s missing: nichealth-mad cannot be built (apt-get install libibumad-dev libibmad-dev)", h)
		}
	}
	for _, cmd := range []string{"nichealthd", "nichealthctl", "nichealth-fabric", "nichealth-mad"} {
		build := exec.Command("go", "build", "-o", filepath.Join(bin, cmd), filepath.Join(root, "cmd", cmd))
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if cmd == "nichealth-mad" {
			build.Env = append(os.Environ(), "CGO_ENABLED=1")
		}
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", cmd, err, out)
		}
	}
	build := exec.Command("sh", filepath.Join(root, "packaging", "build-deb.sh"), bin, filepath.Join(work, "dist"))
	build.Env = append(os.Environ(), "VERSION=0.0.0+test")
	out, err := build.CombinedOutput()
	if err != nil {
		t.Fatalf("build-deb.sh: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	deb := lines[len(lines)-1]
	x := filepath.Join(work, "x")
	if out, err := exec.Command("dpkg-deb", "-x", deb, x).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x: %v\n%s", err, out)
	}
	for installed, src := range map[string]string{
		"usr/share/nichealthd/prometheus/nichealth.rules.yml":      "packaging/prometheus/nichealth.rules.yml",
		"usr/share/nichealthd/prometheus/nichealth.rules.test.yml": "packaging/prometheus/nichealth.rules.test.yml",
		"usr/share/nichealthd/grafana/nichealthd.json":             "packaging/grafana/nichealthd.json",
		"usr/lib/udev/rules.d/60-nichealthd-vpd.rules":             "packaging/udev/60-nichealthd-vpd.rules",
		"usr/lib/udev/rules.d/60-nichealthd-umad.rules":            "packaging/udev/60-nichealthd-umad.rules",
	} {
		got, err := os.ReadFile(filepath.Join(x, installed))
		if err != nil {
			t.Errorf("the .deb lacks /%s: %v", installed, err)
			continue
		}
		want, err := os.ReadFile(filepath.Join(root, src))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("/%s differs from %s", installed, src)
		}
		if fi, _ := os.Stat(filepath.Join(x, installed)); fi.Mode().Perm() != 0o644 {
			t.Errorf("/%s has mode %v", installed, fi.Mode().Perm())
		}
	}
	// The MAD helper is the daemon's private executable, and the package
	// pulls in the libraries it links (DESIGN.md section 13).
	if fi, err := os.Stat(filepath.Join(x, "usr/libexec/nichealthd/nichealth-mad")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("the .deb lacks an executable /usr/libexec/nichealthd/nichealth-mad: %v", err)
	}
	if _, err := os.Stat(filepath.Join(x, "usr/bin/nichealth-mad")); err == nil {
		t.Error("the .deb puts nichealth-mad in /usr/bin: it is not an operator's command")
	}
	ctl, err := exec.Command("dpkg-deb", "-f", deb, "Depends").CombinedOutput()
	if err != nil {
		t.Fatalf("dpkg-deb -f: %v\n%s", err, ctl)
	}
	for _, dep := range []string{"libibumad3", "libibmad5"} {
		if !strings.Contains(string(ctl), dep) {
			t.Errorf("Depends: %s lacks %s, which nichealth-mad links", strings.TrimSpace(string(ctl)), dep)
		}
	}
}
