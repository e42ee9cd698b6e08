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
		// rewatch is armed while the directory is gone: removed (or moved
		// away) and recreated, as a configuration management run or an
		// operator's rm -r and restore do, it would otherwise never be
		// watched again and edits would silently stop applying.
		var rewatch <-chan time.Time
		wait := time.Duration(0)
		for {
			select {
			case <-ctx.Done():
				return
			case <-rewatch:
				if err := w.Add(dir); err != nil {
					wait = min(2*wait, 5*time.Second)
					rewatch = time.After(wait)
					continue
				}
				rewatch = nil
				resolved, _ = filepath.EvalSymlinks(path)
				d.log.Info("configuration directory is back; live reload resumes", "dir", dir)
				select {
				case d.reloadCh <- nil: // the file may have changed meanwhile
				default:
				}
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Clean(ev.Name) == filepath.Clean(dir) && ev.Has(fsnotify.Remove|fsnotify.Rename) {
					w.Remove(dir) // a moved directory's watch would follow it
					if rewatch == nil {
						d.log.Warn("configuration directory removed or moved away; edits are applied again once it is back (systemctl reload applies them meanwhile)", "dir", dir)
						wait = 250 * time.Millisecond
						rewatch = time.After(wait)
					}
					continue
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
