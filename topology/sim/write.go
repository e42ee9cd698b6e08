package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// tmpDir holds files on their way into the tree. Keeping them outside the
// sysfs directories means a reader listing counters/ or hw_counters/ never
// sees a half-made file; rename within one filesystem is still atomic.
const tmpDir = ".tmp"

// writeAtomic replaces path (inside the host at root) with data through a
// temporary file and a rename, so a concurrent reader sees the old or the
// new content, never a torn write.
func writeAtomic(root, path string, data []byte) error {
	dir := filepath.Join(root, tmpDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "w-*")
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

// treeWriter collects the initial tree as a list of operations and then
// runs them in parallel (flush): nobody reads the tree during Build, so
// plain writes are fine, and creating thousands of small files is bound by
// per-file syscall latency rather than bandwidth.
type treeWriter struct {
	made    map[string]bool // directories already queued (or existing)
	dirs    [][]string      // mkdir ops by depth
	ops     []op            // files and links
	base    int             // depth of the root
	private bool            // one inode per file (BuildOptions.PrivateFiles)
	err     error
}

type op struct {
	path, data string
	link       bool
}

func newTreeWriter(root string) *treeWriter {
	return &treeWriter{made: map[string]bool{root: true}, base: strings.Count(root, "/")}
}

func (w *treeWriter) dir(p string) {
	if w.made[p] {
		return
	}
	w.dir(filepath.Dir(p))
	w.made[p] = true
	d := strings.Count(p, "/") - w.base
	for len(w.dirs) <= d {
		w.dirs = append(w.dirs, nil)
	}
	w.dirs[d] = append(w.dirs[d], p)
}

func (w *treeWriter) file(p, content string) {
	w.dir(filepath.Dir(p))
	w.ops = append(w.ops, op{path: p, data: content})
}

// link queues a symlink at p pointing at target (an absolute path inside
// H), written relative to p's directory as the kernel's sysfs does.
func (w *treeWriter) link(p, target string) {
	rel, err := filepath.Rel(filepath.Dir(p), target)
	if err != nil {
		if w.err == nil {
			w.err = fmt.Errorf("link %s -> %s: %w", p, target, err)
		}
		return
	}
	w.dir(filepath.Dir(p))
	w.ops = append(w.ops, op{path: p, data: sysfsRel(rel, target), link: true})
}

// sysfsRel spells a link to an ancestor the way sysfs does: device ->
// "../../../0000:3b:00.0" rather than "../..", so the target's last element
// names the device.
func sysfsRel(rel, target string) string {
	if rel == ".." || strings.Trim(strings.ReplaceAll(rel, "..", ""), "/") == "" {
		return rel + "/../" + filepath.Base(target)
	}
	return rel
}

// flush creates the queued directories level by level, then the files and
// links, each stage spread over a few goroutines.
func (w *treeWriter) flush() error {
	if w.err != nil {
		return w.err
	}
	for _, level := range w.dirs {
		if err := parallel(len(level), func(i int) error {
			if err := os.Mkdir(level[i], 0o755); err != nil && !os.IsExist(err) {
				return fmt.Errorf("create %s: %w", level[i], err)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	// Files with the same content share one inode unless w.private: on
	// the filesystems tests run on, a hard link costs a fraction of
	// creating a file, and every Host mutation replaces a file by rename,
	// which unshares it.
	// Symlinks with the same target text share an inode too (link(2) does
	// not follow symlinks); readers see ordinary symlinks either way.
	type key struct {
		link bool
		data string
	}
	// A master takes at most maxLinks links (ext4 caps an inode at 65000).
	const maxLinks = 1000
	type group struct {
		master string
		n      int
	}
	groups := map[key]*group{}
	masterOf := make([]string, len(w.ops))
	var masters, rest []int
	for i, o := range w.ops {
		k := key{o.link, o.data}
		g := groups[k]
		if g != nil && g.n < maxLinks && !w.private {
			g.n++
			masterOf[i] = g.master
			rest = append(rest, i)
			continue
		}
		groups[k] = &group{master: o.path}
		masters = append(masters, i)
	}
	create := func(o op) error {
		if o.link {
			if err := os.Symlink(o.data, o.path); err != nil {
				return fmt.Errorf("link %s -> %s: %w", o.path, o.data, err)
			}
			return nil
		}
		return writeNew(o.path, o.data)
	}
	if err := parallel(len(masters), func(i int) error { return create(w.ops[masters[i]]) }); err != nil {
		return err
	}
	return parallel(len(rest), func(i int) error {
		o := w.ops[rest[i]]
		if err := os.Link(masterOf[rest[i]], o.path); err != nil {
			// A filesystem without hard links (or with a lower cap) still
			// gets a correct tree, only slower.
			return create(o)
		}
		return nil
	})
}

// writeNew creates a file with raw syscalls: os.File's poller registration
// and finalizer are measurable at tens of thousands of files.
func writeNew(p, data string) error {
	fd, err := syscall.Open(p, syscall.O_CREAT|syscall.O_WRONLY|syscall.O_TRUNC|syscall.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	if len(data) > 0 {
		if _, err := syscall.Write(fd, []byte(data)); err != nil {
			syscall.Close(fd)
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	if err := syscall.Close(fd); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

// parallel runs f(0..n-1) on a few goroutines and returns the first error.
func parallel(n int, f func(i int) error) error {
	workers := 2 * runtime.GOMAXPROCS(0)
	if workers > 8 {
		workers = 8
	}
	if n < 64 {
		workers = 1
	}
	var (
		next atomic.Int64
		mu   sync.Mutex
		ferr error
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					mu.Lock()
					if ferr == nil {
						ferr = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return ferr
}
