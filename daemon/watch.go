package daemon

import (
	"context"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// reloadDebounce folds an editor's burst of events (write temp, rename,
// chmod) into one reload.
const reloadDebounce = 150 * time.Millisecond

// watchConfig watches the config file's directory, not the file: an
// editor's rename-over, vim's replace, sed -i and a ConfigMap's ..data
// symlink swap all replace the inode, which silently ends a watch on the
// file itself.
func (d *Daemon) watchConfig(ctx context.Context) (stop func()) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		d.log.Warn("cannot watch the configuration; use systemctl reload after edits", "err", err)
		return func() {}
	}
	path := d.opts.ConfigPath
	dir := filepath.Dir(path)
	if err := w.Add(dir); err != nil {
		d.log.Warn("cannot watch the configuration directory; use systemctl reload after edits", "dir", dir, "err", err)
		w.Close()
		return func() {}
	}
	base := filepath.Base(path)
	resolved, _ := filepath.EvalSymlinks(path)
	go func() {
		var timer *time.Timer
		var fire <-chan time.Time
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				name := filepath.Base(ev.Name)
				// A ConfigMap swaps the ..data symlink; the file name the
				// daemon was given never changes.
				now, _ := filepath.EvalSymlinks(path)
				if name != base && name != "..data" && now == resolved {
					continue
				}
				resolved = now
				if timer == nil {
					timer = time.NewTimer(reloadDebounce)
				} else {
					timer.Reset(reloadDebounce)
				}
				fire = timer.C
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				d.log.Warn("configuration watch error", "err", err)
			case <-fire:
				fire = nil
				select {
				case d.reloadCh <- nil:
				default:
				}
			}
		}
	}()
	return func() { w.Close() }
}
