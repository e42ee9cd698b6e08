package completion

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/config/patterntable"

	"github.com/nichealth/nichealthd/internal/component"
)

// complete runs the bash completion for the words typed so far (the last
// one being completed) and returns what it offers.
func complete(t *testing.T, words ...string) []string {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		component.Missing(t, "bash not installed")
	}
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = "'" + w + "'"
	}
	script := `source ./nichealthctl.bash
COMP_WORDS=(` + strings.Join(quoted, " ") + `)
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
_nichealthctl
printf '%s\n' "${COMPREPLY[@]}"`
	out, err := exec.Command(bash, "--norc", "--noprofile", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

func TestBashCompletion_OptionsFollowTheCommand(t *testing.T) {
	before := complete(t, "nichealthctl", "--")
	slices.Sort(before)
	if !slices.Equal(before, []string{"--help", "--version"}) {
		t.Errorf("before the command it offers %v; nichealthctl accepts only --help and --version there", before)
	}
	for _, cmd := range []string{"status", "ports", "port", "ack", "events", "check", "wait-ready", "reload"} {
		got := complete(t, "nichealthctl", cmd, "--")
		for _, want := range []string{"--json", "--bus-address"} {
			if !slices.Contains(got, want) {
				t.Errorf("nichealthctl %s --<TAB> offers %v, missing %s", cmd, got, want)
			}
		}
	}
	if got := complete(t, "nichealthctl", "st"); !slices.Equal(got, []string{"status"}) {
		t.Errorf("nichealthctl st<TAB> offers %v", got)
	}
}

// ackTargets are what nichealthctl ack takes besides the counter table's
// names: the latches of other signals (the daemon's AcknowledgeReset): PCIe
// AER, and the kernel log with the names of its fatal patterns, which
// latch.
func ackTargets() []string {
	out := []string{"pcie_aer", patterntable.AckAll}
	for _, p := range patterntable.Defaults() {
		if p.Severity == patterntable.Fatal {
			out = append(out, p.Name)
		}
	}
	// The far end's conditions (DESIGN.md section 13): each default row's
	// peer:ROW, the peer-unstable finding, and each default field's
	// saturation.
	out = append(out, "peer:unstable")
	for _, r := range countertable.FarEndTable(countertable.TableDefaults(), nil) {
		out = append(out, r.Code())
		if sat := "peer-saturated:" + r.Field; !slices.Contains(out, sat) {
			out = append(out, sat)
		}
	}
	return out
}

// ack's third argument offers every built-in counter (PHY statistics
// included) and every non-counter latch, in both shells: a counter added
// to the table, or a latch added to the daemon, fails here until the
// completions offer it.
func TestCompletion_AckOffersEveryLatch(t *testing.T) {
	var want []string
	for _, d := range countertable.TableDefaults() {
		want = append(want, d.Name)
	}
	want = append(want, ackTargets()...)
	slices.Sort(want)
	got := complete(t, "nichealthctl", "ack", "mlx5_0", "1", "")
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("bash offers %v\nwant %v", got, want)
	}
	z, err := os.ReadFile("_nichealthctl")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`'3:latch:\(([^)]*)\)'`).FindSubmatch(z)
	if m == nil {
		t.Fatal("zsh: no '3:latch:(...)' for ack")
	}
	// zsh's _arguments takes a colon inside a word escaped.
	zs := strings.Fields(strings.ReplaceAll(string(m[1]), `\:`, ":"))
	slices.Sort(zs)
	if !slices.Equal(zs, want) {
		t.Errorf("zsh offers %v\nwant %v", zs, want)
	}
}
