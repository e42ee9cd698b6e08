package fabricshare

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/nichealth/nichealthd/internal/regularfile"
)

// readDeadline bounds a read of the assignment file: a hung network
// filesystem must not hold the reader.
const readDeadline = 5 * time.Second

// errAbsent is an assignment file that does not exist: no share to read
// (a job's epilog removes it, a node outside any job has none).
var errAbsent = errors.New("no assignment file")

// readFile reads the assignment file within deadline (a hung read is
// joined by the next, never repeated: regularfile.Joined).
func readFile(files *regularfile.Joined, path string, deadline time.Duration) ([]byte, error) {
	b, err := files.Read(path, MaxFileBytes, deadline)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, errAbsent
	case errors.Is(err, regularfile.ErrHung):
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, err
}

// watchDebounce folds a writer's burst (write temp, rename, chmod) into
// one read.
const watchDebounce = 150 * time.Millisecond

// watch pokes changed whenever something in path's directory that may be
// path changes. It watches the directory, not the file: a rename-over (as
// nichealth-fabric plan -o and configuration management write) replaces
// the inode. A directory that does not exist yet, or goes away, is looked
// for again at every interval round (the reader reads the file each
// round too, so nothing is missed for long). Ends with ctx.
func watch(ctx context.Context, path string, changed func(), log func(msg string, args ...any)) (rewatch func()) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		log("cannot watch the fabric assignment; it is read again each interval and on reload", "file", path, "err", err)
		return func() {}
	}
	dir, base := filepath.Dir(path), filepath.Base(path)
	var mu sync.Mutex
	watching := false
	add := func() {
		mu.Lock()
		defer mu.Unlock()
		if watching {
			return
		}
		if err := w.Add(dir); err == nil {
			watching = true
		}
	}
	add()
	resolved, _ := filepath.EvalSymlinks(path)
	go func() {
		defer w.Close()
		var timer *time.Timer
		var fire <-chan time.Time
		for {
			select {
			case <-ctx.Done():
				if timer != nil {
					timer.Stop()
				}
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Clean(ev.Name) == filepath.Clean(dir) && ev.Has(fsnotify.Remove|fsnotify.Rename) {
					w.Remove(dir)
					mu.Lock()
					watching = false
					mu.Unlock()
					changed()
					continue
				}
				now, _ := filepath.EvalSymlinks(path)
				if n := filepath.Base(ev.Name); n != base && n != "..data" && now == resolved {
					continue
				}
				resolved = now
				if timer == nil {
					timer = time.NewTimer(watchDebounce)
				} else {
					timer.Reset(watchDebounce)
				}
				fire = timer.C
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
				// An overflowed queue may have lost the event that
				// mattered: read the file again.
				changed()
			case <-fire:
				fire = nil
				changed()
			}
		}
	}()
	return add
}
