package persist

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/nichealth/nichealthd/internal/regularfile"
)

// InventoryFile is the name of the expected inventory beside the state
// file (a CrossBootFile the daemon keeps in its state directory).
const InventoryFile = "inventory.json"

// InventoryPath is where the daemon whose state file is stateFile keeps
// its expected inventory.
func InventoryPath(stateFile string) string {
	return filepath.Join(filepath.Dir(stateFile), InventoryFile)
}

// Peek reads the state file at path and changes nothing on disk: it is
// how `nichealthctl check` reads a stopped daemon's memory. Load, the
// daemon's loader, moves an unusable file aside and removes what an
// interrupted save left; a reader that is not the file's owner must do
// neither (the daemon keeps the unusable file's bytes for whoever
// investigates, and may be writing next to it this very moment).
// Outcomes:
//   - (state, Report{Status: LoadLoaded}, nil): read; Report.Dropped
//     lists the entries validation dropped;
//   - (empty state, Report{Status: LoadFresh}, nil): there is no file;
//   - (empty state, Report{Status: LoadCorrupt}, nil): the file is
//     unusable, Reason says why; it stays where it is (Preserved is "");
//   - (nil, _, err): the file cannot be read (permissions, a directory in
//     its place) or was written by a newer nichealthd (ErrNewerSchema).
func Peek(path string) (*State, Report, error) {
	raw, err := readBounded(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return NewState(""), Report{Status: LoadFresh}, nil
	case errors.Is(err, errTooLarge), errors.Is(err, errNotRegular):
		return NewState(""), Report{Status: LoadCorrupt, Reason: err.Error()}, nil
	case err != nil:
		return nil, Report{}, fmt.Errorf("read state file %s: %w", path, err)
	}
	st, dropped, reason, err := decode(path, raw)
	if err != nil {
		return nil, Report{}, err
	}
	if reason != "" || st == nil {
		return NewState(""), Report{Status: LoadCorrupt, Reason: reason}, nil
	}
	return st, Report{Status: LoadLoaded, Dropped: dropped}, nil
}

// PeekCrossBoot reads a CrossBootFile's content without changing anything
// on disk (CrossBootFile.Load also removes an interrupted save's
// temporary files). Outcomes: (content, nil); (nil, nil) when there is
// no file; (nil, err) when it is unreadable, too large or not a regular
// file, err naming it.
func PeekCrossBoot(path string) ([]byte, error) {
	b, err := regularfile.Read(path, maxCrossBootBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}
