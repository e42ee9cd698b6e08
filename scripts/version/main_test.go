package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/internal/version"
)

type fakeGit map[string]string

func (f fakeGit) run(args ...string) (string, error) {
	out, ok := f[strings.Join(args, " ")]
	if !ok {
		return "", errors.New("not a git repository")
	}
	return out, nil
}

func TestDescribe(t *testing.T) {
	base := version.Base
	for _, tc := range []struct {
		name string
		git  fakeGit
		want string
	}{
		{"no git checkout (a source tarball)", fakeGit{}, base},
		{"the release commit, clean", fakeGit{
			"rev-parse --short=12 HEAD": "abcdef123456", "status --porcelain --untracked-files=no": "",
			"tag --points-at HEAD": "v" + base, "rev-list --count HEAD": "40"}, base},
		{"after the release", fakeGit{
			"rev-parse --short=12 HEAD": "abcdef123456", "status --porcelain --untracked-files=no": "",
			"tag --points-at HEAD": "", "rev-list --count HEAD": "41"}, base + "+git.41.gabcdef123456"},
		{"the release commit with local changes", fakeGit{
			"rev-parse --short=12 HEAD": "abcdef123456", "status --porcelain --untracked-files=no": " M README.md",
			"tag --points-at HEAD": "v" + base, "rev-list --count HEAD": "40"}, base + "+git.40.gabcdef123456.dirty"},
	} {
		if got := describe(tc.git.run); got != tc.want {
			t.Errorf("%s: describe = %q, want %q", tc.name, got, tc.want)
		}
	}
}
