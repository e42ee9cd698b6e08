package daemon

import (
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/mad"
	"github.com/nichealth/nichealthd/mad/farend"
)

// farEndRun is the far end's reader and the helper it runs: the daemon's
// to start, reconfigure and stop, on the loop's goroutine, never waiting
// for them there.
type farEndRun struct {
	reader *farend.PeerReader
	helper string
}

// helperPath is nichealth-mad's path: the configured one, else the one
// installed beside the daemon (../libexec/nichealthd/ from /usr/bin or
// /usr/local/bin, then the daemon's own directory, as in a build tree).
func helperPath(cfg *config.Config) string {
	if cfg.MAD.Helper != "" {
		return cfg.MAD.Helper
	}
	exe, err := os.Executable()
	if err != nil {
		return "/usr/libexec/nichealthd/nichealth-mad"
	}
	dir := filepath.Dir(exe)
	cands := []string{filepath.Join(dir, "..", "libexec", "nichealthd", "nichealth-mad"), filepath.Join(dir, "nichealth-mad")}
	for _, c := range cands {
		if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() {
			return filepath.Clean(c)
		}
	}
	return filepath.Clean(cands[0])
}

func readerConfig(cfg *config.Config) farend.PeerConfig {
	return farend.PeerConfig{Interval: cfg.FarEnd.Interval, Timeout: cfg.FarEnd.Timeout, NodeNameMap: cfg.FarEnd.NodeNameMap,
		Optional: cfg.FarEnd.NodeNameMapOptional, UmadDir: filepath.Join(cfg.Paths.DevRoot, "infiniband")}
}

// syncFarEndLocked brings the far end's reader to cfg: started, told the
// new interval and map, restarted with another helper, or stopped. A
// reader is stopped off the loop: it may be waiting on its helper.
// Caller holds d.mu.
func (d *Daemon) syncFarEndLocked(cfg *config.Config) {
	fe := &d.farEnd
	if !cfg.FarEndOn() {
		if fe.reader != nil {
			d.log.Info("the far end of the InfiniBand ports is no longer read", "reason", "[farEnd] enabled = false or the check is off")
		}
		d.stopFarEndLocked()
		return
	}
	path := helperPath(cfg)
	if fe.reader != nil && fe.helper == path {
		fe.reader.Configure(readerConfig(cfg))
		return
	}
	d.stopFarEndLocked()
	log := d.log.With("component", "far-end")
	client := mad.New(mad.Config{Path: path, Log: log})
	fe.reader, fe.helper = farend.StartPeerReader(readerConfig(cfg), client, log), path
	d.run.UseFarEnd(fe.reader)
	d.log.Info("reading the far end of the InfiniBand ports", "helper", path, "interval", cfg.FarEnd.Interval)
}

// stopFarEndLocked takes the reader off the cycle and closes it on a
// goroutine of its own. Caller holds d.mu.
func (d *Daemon) stopFarEndLocked() {
	fe := &d.farEnd
	d.run.UseFarEnd(nil)
	if fe.reader == nil {
		return
	}
	r := fe.reader
	fe.reader, fe.helper = nil, ""
	d.closeReaderLocked(r.Close)
}

// closeReaderLocked closes a MAD reader (the far end's, the fabric
// share's) on a goroutine of its own, since it may be waiting on its
// helper; shutdown waits for it (awaitFarEnd). Caller holds d.mu.
func (d *Daemon) closeReaderLocked(closeReader func()) {
	done := make(chan struct{})
	go func() { closeReader(); close(done) }()
	// Only the stops still under way are kept (reload after reload).
	d.farEndStops = slices.DeleteFunc(d.farEndStops, func(c chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	})
	d.farEndStops = append(d.farEndStops, done)
}

// awaitFarEnd waits, at shutdown, for stopped readers to end their
// helpers, at most within.
func (d *Daemon) awaitFarEnd(within time.Duration) {
	deadline := time.After(within)
	for _, done := range d.farEndStops {
		select {
		case <-done:
		case <-deadline:
			return
		}
	}
}
