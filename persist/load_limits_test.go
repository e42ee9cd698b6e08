package persist

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestState_6_6_SizeLimitIsInclusive: a state file of exactly the limit
// (64 MiB) loads; one byte more is refused as corrupt, not read into
// memory whole.
func TestState_6_6_SizeLimitIsInclusive(t *testing.T) {
	dir := t.TempDir()
	body := []byte(`{"version": 1, "boot_id": "` + bootA + `"}`)
	for _, tc := range []struct {
		size int
		want LoadStatus
	}{{64 << 20, LoadLoaded}, {64<<20 + 1, LoadCorrupt}} {
		path := filepath.Join(dir, "state.json")
		// JSON allows any amount of trailing whitespace.
		b := append(append([]byte(nil), body...), bytes.Repeat([]byte{' '}, tc.size-len(body))...)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		_, rep, err := LoadDetailed(path)
		if err != nil || rep.Status != tc.want {
			t.Fatalf("%d bytes: %+v, %v; want %v", tc.size, rep, err, tc.want)
		}
		os.Remove(path)
		os.Remove(path + CorruptSuffix)
	}
}

// TestState_6_6_FractionalVersionOfThisSchemaIsCorrupt: "1.0" is not a
// version this nichealthd wrote; "2.5" is a newer one and is refused.
func TestState_6_6_FractionalVersionOfThisSchemaIsCorrupt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte(`{"version": 1.0, "boot_id": "`+bootA+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, rep, err := LoadDetailed(path); err != nil || rep.Status != LoadCorrupt {
		t.Fatalf("version 1.0: %+v, %v; want corrupt", rep, err)
	}
	if err := os.WriteFile(path, []byte(`{"version": 2.5, "boot_id": "`+bootA+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadDetailed(path); err == nil {
		t.Fatal("version 2.5 loaded; want it refused as newer")
	}
}
