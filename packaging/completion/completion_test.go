package completion

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

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
