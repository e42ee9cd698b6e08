package persist

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// listDir is a directory's names and contents, to prove a reader left it
// as it found it.
func listDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		out[e.Name()] = string(b)
	}
	return out
}

func sameDir(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Peek reads what Load reads and leaves the directory exactly as it was:
// an unusable file is not moved aside, an interrupted save's temporary
// file is not removed, nothing is created.
func TestPeek_ReadsAndChangesNothing(t *testing.T) {
	const boot = "0b6c8a3e-1d2f-4c5b-9a7e-3f1e2d4c5b6a"
	good := NewState(boot)
	good.SetSection("counters", []byte(`{"version":1}`))
	cases := []struct {
		name   string
		write  func(t *testing.T, path string)
		status LoadStatus
		err    error
	}{
		{"no file", func(*testing.T, string) {}, LoadFresh, nil},
		{"valid file", func(t *testing.T, p string) { must(t, Save(p, good)) }, LoadLoaded, nil},
		{"not JSON", func(t *testing.T, p string) { must(t, os.WriteFile(p, []byte("garbage\n"), 0o600)) }, LoadCorrupt, nil},
		{"empty", func(t *testing.T, p string) { must(t, os.WriteFile(p, nil, 0o600)) }, LoadCorrupt, nil},
		{"newer schema", func(t *testing.T, p string) { must(t, os.WriteFile(p, []byte(`{"version":99}`), 0o600)) }, 0, ErrNewerSchema},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "state.json")
			c.write(t, p)
			// What a save killed between create and rename leaves.
			must(t, os.WriteFile(p+tempInfix+"123", []byte("{"), 0o600))
			before := listDir(t, dir)
			st, rep, err := Peek(p)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("err %v, want %v", err, c.err)
				}
			} else if err != nil || rep.Status != c.status || st == nil || st.Checks == nil {
				t.Fatalf("Peek: %v %+v %v", st, rep, err)
			}
			if rep.Status == LoadCorrupt && (rep.Reason == "" || rep.Preserved != "") {
				t.Errorf("corrupt report %+v: want a reason and nothing preserved", rep)
			}
			if c.status == LoadLoaded && (st.BootID != boot || !strings.Contains(string(st.Section("counters")), `"version"`)) {
				t.Errorf("loaded %+v", st)
			}
			if after := listDir(t, dir); !sameDir(before, after) {
				t.Errorf("the directory changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

func TestPeek_UnreadableIsAnErrorNamingTheFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	must(t, os.Mkdir(p, 0o700))
	if _, _, err := Peek(p); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("a directory in the file's place: %v", err)
	}
}

func TestPeekCrossBoot(t *testing.T) {
	dir := t.TempDir()
	p := InventoryPath(filepath.Join(dir, "state.json"))
	if p != filepath.Join(dir, InventoryFile) {
		t.Fatalf("InventoryPath = %s", p)
	}
	if b, err := PeekCrossBoot(p); b != nil || err != nil {
		t.Fatalf("no file: %q %v", b, err)
	}
	must(t, os.WriteFile(p, []byte(`{"version":1}`), 0o600))
	must(t, os.WriteFile(p+tempInfix+"9", []byte("{"), 0o600))
	before := listDir(t, dir)
	if b, err := PeekCrossBoot(p); string(b) != `{"version":1}` || err != nil {
		t.Fatalf("file: %q %v", b, err)
	}
	if !sameDir(before, listDir(t, dir)) {
		t.Error("PeekCrossBoot changed the directory")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
