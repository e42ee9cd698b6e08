package main

import (
	"regexp"
	"strings"
	"testing"
)

var singleDash = regexp.MustCompile(`(?m)^\s+-[a-z]`)

// Every usage text spells options as operators type them and as the
// manual page lists them: --name, never the flag package's -name.
func TestCtl_HelpListsOptionsWithDoubleDash(t *testing.T) {
	var cmds [][]string
	for name := range commands() {
		cmds = append(cmds, []string{name, "--help"})
	}
	cmds = append(cmds, []string{"topology", "parse", "--help"}, []string{"topology", "collect", "--help"}, []string{"topology", "show", "--help"}, []string{"module", "decode", "--help"})
	for _, args := range cmds {
		var out, errOut strings.Builder
		run(args, strings.NewReader(""), &out, &errOut)
		text := out.String() + errOut.String()
		if !strings.Contains(text, "--") && args[1] != "parse" { // parse has no options
			t.Errorf("nichealthctl %s: no options listed:\n%s", strings.Join(args, " "), text)
		}
		if m := singleDash.FindString(text); m != "" {
			t.Errorf("nichealthctl %s: option listed with one dash (%q):\n%s", strings.Join(args, " "), strings.TrimSpace(m), text)
		}
	}
}
