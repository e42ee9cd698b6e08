package nichealthd_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// shellPipe is a "|" set apart between two words, as in
// "dmesg | grep ADDR": a command line piped into another. A regular
// expression's alternation ("timeout|No done", "observed, |synd") has no
// space on at least one side.
var shellPipe = regexp.MustCompile(`[^\s|] +\| +[^\s|]`)

// Every fix text and recommended command the checks can emit reaches the
// Nagios line whole: Nagios reserves "|" for performance data, so no
// message, action or description written in the daemon's source phrases a
// command with a shell pipe ("journalctl -k --grep ADDR", never
// "dmesg | grep ADDR"). The scan covers every string literal of the
// packages that make events and their texts (the checks, the counter and
// kernel-log tables, the observation, the daemon's own monitoring
// conditions); a regular expression's alternation has no spaces around
// its "|" and is not a pipe.
func TestNagios_FixTextsHaveNoShellPipe(t *testing.T) {
	fset := token.NewFileSet()
	found := 0
	for _, root := range []string{"checks", "config", "event", "observe", "topology", "daemon"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				found++
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					return true
				}
				if shellPipe.MatchString(s) {
					t.Errorf("%s: a text with a shell pipe, which the Nagios line cannot carry (Nagios reserves | for performance data): %q",
						fset.Position(lit.Pos()), s)
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if found < 1000 {
		t.Fatalf("scanned only %d string literals: the walk missed the source", found)
	}
}

// The scan's pattern tells a pipe from an alternation.
func TestNagios_ShellPipePattern(t *testing.T) {
	for s, want := range map[string]bool{
		"Read `dmesg | grep 0000:9b:00.0` for the probe error": true,
		"lspci -vv | grep LnkSta":                              true,
		"Health issue observed, |synd 0x":                      false,
		"(timeout|No done completion)":                         false,
		"join patterns into one regex with |, or disable":      false,
		" | ":      false,
		"%v|%s|%s": false,
		"Read `journalctl -k --grep 0000:9b:00.0` for the probe error": false,
	} {
		if got := shellPipe.MatchString(s); got != want {
			t.Errorf("%q: pipe %v, want %v", s, got, want)
		}
	}
}
