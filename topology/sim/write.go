package sim

import (
	"fmt"
	"os"
	"path/filepath"
)

// writeAtomic replaces path with data through a temporary file in the same
// directory and a rename, so a concurrent reader sees the old or the new
// content, never a torn write.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".sim-tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp, 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, werr)
	}
	return nil
}

// treeWriter writes the initial tree with plain writes (nobody reads it
// yet) and keeps the first error so the build code stays linear.
type treeWriter struct {
	err error
}

func (w *treeWriter) dir(p string) {
	if w.err != nil {
		return
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		w.err = fmt.Errorf("create %s: %w", p, err)
	}
}

func (w *treeWriter) file(p, content string) {
	if w.err != nil {
		return
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		w.err = fmt.Errorf("write %s: %w", p, err)
	}
}

// link creates a symlink at p pointing at target (an absolute path inside
// H), written relative to p's directory as the kernel's sysfs does.
func (w *treeWriter) link(p, target string) {
	if w.err != nil {
		return
	}
	rel, err := filepath.Rel(filepath.Dir(p), target)
	if err != nil {
		w.err = fmt.Errorf("link %s -> %s: %w", p, target, err)
		return
	}
	if err := os.Symlink(rel, p); err != nil {
		w.err = fmt.Errorf("link %s -> %s: %w", p, rel, err)
	}
}
