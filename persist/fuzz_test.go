package persist

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoadState feeds arbitrary bytes as a state file. Load must never
// panic, must return a usable state or an error, and must refuse (never
// overwrite) anything whose version says it is newer than this build.
func FuzzLoadState(f *testing.F) {
	f.Add([]byte(`{"version":1,"boot_id":"` + bootA + `","port_states":{"mlx5_0_1":{"state":"1: DOWN","device":"mlx5_0","port":1}}}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{"version":1,"counter_snapshots":{"a:1:b":{"value":1,"timestamp":"2025-01-01T00:00:00Z"}}}`))
	f.Add([]byte(``))
	f.Add([]byte(`null`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "state.json")
		os.Remove(path + CorruptSuffix)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		st, rep, err := LoadDetailed(path)
		if newer(b) {
			if !errors.Is(err, ErrNewerSchema) {
				t.Fatalf("version above %d not refused: %v %+v", SchemaVersion, err, rep)
			}
			return
		}
		if err != nil {
			if errors.Is(err, ErrNewerSchema) {
				t.Fatalf("refused a file that is not newer: %v", err)
			}
			return
		}
		if st == nil || st.Checks == nil {
			t.Fatalf("unusable state %+v (%+v)", st, rep)
		}
		for name, raw := range st.Checks {
			if !json.Valid(raw) || bytes.TrimSpace(raw)[0] != '{' {
				t.Fatalf("section %s kept but not a JSON object: %q", name, raw)
			}
		}
		// Whatever was loaded must save and load back the same.
		if rep.Status == LoadLoaded {
			if err := Save(path, st); err != nil {
				t.Fatal(err)
			}
			if _, status, err := Load(path); err != nil || status != LoadLoaded {
				t.Fatalf("re-load of saved state = %v, %v", status, err)
			}
		}
	})
}

// newer is an independent reading of "the file says version > 1".
func newer(b []byte) bool {
	var probe struct {
		Version json.Number `json:"version"`
	}
	if !json.Valid(b) || json.Unmarshal(b, &probe) != nil {
		return false
	}
	v, err := probe.Version.Float64()
	return err == nil && v > SchemaVersion
}
