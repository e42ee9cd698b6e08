package persist

import (
	"os"
	"path/filepath"
	"testing"
)

// TestState_6_6_LoadSweepsTempsOfKilledSaves: a save killed between
// create and rename leaves "<name>.tmp-<random>"; the next start removes
// exactly those, in the state file's own directory, and nothing else.
func TestState_6_6_LoadSweepsTempsOfKilledSaves(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := Save(path, sampleState()); err != nil {
		t.Fatal(err)
	}
	leftovers := []string{path + tempInfix + "k3j2", path + tempInfix + "0"}
	keep := []string{filepath.Join(dir, "other.json"+tempInfix+"1"), filepath.Join(dir, "state.json.bak")}
	for _, p := range append(append([]string(nil), leftovers...), keep...) {
		if err := os.WriteFile(p, []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := NewStore(path).Load(); err != nil {
		t.Fatal(err)
	}
	for _, p := range leftovers {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s was not swept", p)
		}
	}
	for _, p := range keep {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}
