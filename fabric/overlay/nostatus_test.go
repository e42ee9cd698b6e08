package overlay

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFabric_40_11_NoStatusReadIsAnError: a --status that names a file,
// an empty directory, or a directory of files that are not dumps read no
// status, and say so, where they used to give an overlay of nothing. A
// FIFO named like a dump is skipped, not waited on.
func TestFabric_40_11_NoStatusReadIsAnError(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "README.md")
	if err := os.WriteFile(file, []byte("# notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty, junk := filepath.Join(dir, "empty"), filepath.Join(dir, "junk")
	for _, d := range []string{empty, junk} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(junk, "a.json"), []byte(`{"nodeName":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(junk, "b.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir, want string
		probs     int
	}{
		{file, "is not a directory", 0},
		{empty, "read no status: " + empty + " holds no *.json dump", 0},
		{junk, "read no status: none of the 2 *.json files", 2},
	} {
		o, probs, err := FromStatusDir(tc.dir)
		if err == nil || o != nil || !strings.Contains(err.Error(), tc.want) || len(probs) != tc.probs {
			t.Errorf("%s: %v %v %v, want %q and %d problems", tc.dir, o, probs, err, tc.want, tc.probs)
		}
	}
	if err := os.WriteFile(filepath.Join(junk, "c.json"), []byte(`{"nodeName":"c","ports":[{"device":"mlx5_0","port":1,"nodeGUID":"0x1","verdict":"healthy"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if o, probs, err := FromStatusDir(junk); err != nil || len(probs) != 2 || len(o.Ports) != 1 {
		t.Fatalf("one dump among two bad files: %v %v %v", o, probs, err)
	}
	// A dump that is JSON of the wrong shape is named in the file's terms
	// (internal/jsonerr), never by our Go types.
	bad := filepath.Join(junk, "d.json")
	if err := os.WriteFile(bad, []byte("{\"nodeName\":\"d\",\n\"ports\":{}}"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, probs, _ := FromStatusDir(junk)
	want := bad + ": not `nichealthctl status --json` output: line 2: ports: an object where a list belongs"
	found := false
	for _, p := range probs {
		found = found || p.Error() == want
	}
	if !found {
		t.Fatalf("problems %v, want %q", probs, want)
	}
}
