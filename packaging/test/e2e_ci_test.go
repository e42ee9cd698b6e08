// Package packagingtest checks the packaging test scripts themselves.
package packagingtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/internal/component"
)

// runE2EAsNobody runs e2e-systemd.sh as an unprivileged user, which
// cannot boot a container: the script's skip path, without a container.
func runE2EAsNobody(t *testing.T, ci string) (string, int) {
	t.Helper()
	if os.Geteuid() != 0 {
		component.Missing(t, "running the script as another user needs root")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		component.Missing(t, "setpriv not installed (apt-get install util-linux)")
	}
	// A copy nobody can read, whatever the checkout's permissions.
	dir, err := os.MkdirTemp("", "nichealth-e2e-ci")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "e2e-systemd.sh")
	b, err := os.ReadFile("e2e-systemd.sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
		"env", "CI="+ci, "sh", script, filepath.Join(dir, "no-bin"))
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// TestE2E_CannotBootFailsUnderCI: make test must not be green under CI
// with no real-systemd test run.
func TestE2E_CannotBootFailsUnderCI(t *testing.T) {
	out, code := runE2EAsNobody(t, "true")
	if code == 0 || !strings.Contains(out, "FAIL: CI=true") || strings.Contains(out, "SKIPPED") {
		t.Fatalf("CI=true: exit %d, output:\n%s", code, out)
	}
}

// TestE2E_CannotBootSkipsLocally: on a developer machine the same case is
// a loud skip, never a PASS.
func TestE2E_CannotBootSkipsLocally(t *testing.T) {
	out, code := runE2EAsNobody(t, "")
	if code != 0 || !strings.Contains(out, "SKIPPED:") || strings.Contains(out, "PASS") {
		t.Fatalf("CI unset: exit %d, output:\n%s", code, out)
	}
}
