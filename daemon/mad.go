package daemon

import (
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/internal/fabricentry"
	"github.com/nichealth/nichealthd/mad"
	"github.com/nichealth/nichealthd/mad/fabricshare"
	"github.com/nichealth/nichealthd/mad/farend"
)

// madReaders are the node's two MAD readers, the far end of its own
// cables (peer) and its share of the fabric's switch ports (share), with
// the helper each runs: the daemon's to start, reconfigure and stop, on
// the loop's goroutine under d.mu, never waiting for them there. Each
// runs its own nichealth-mad process, so a hang reading a distant switch
// never stalls the far end of the node's own cables, nor the reverse.
type madReaders struct {
	peer       *farend.PeerReader
	peerHelper string
	// share is published for /metrics without the lock.
	share       atomic.Pointer[fabricshare.ShareReader]
	shareHelper string
	// stops are the readers being stopped: each is closed on a goroutine
	// of its own, since it may be waiting on its helper; shutdown waits
	// for them (awaitMAD).
	stops []chan struct{}
	// saidAlias: the [farEnd] helper alias is said once per process.
	saidAlias bool
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

func peerConfig(cfg *config.Config) farend.PeerConfig {
	return farend.PeerConfig{Interval: cfg.FarEnd.Interval, Timeout: cfg.FarEnd.Timeout, NodeNameMap: cfg.FarEnd.NodeNameMap,
		Optional: cfg.FarEnd.NodeNameMapOptional, UmadDir: filepath.Join(cfg.Paths.DevRoot, "infiniband")}
}

// fabricHost is the name the assignment file lists this host under: the
// configured one, else the host name's first label (hostname -s, as a
// Slurm node list writes it).
func fabricHost(cfg *config.Config) string {
	if cfg.Fabric.Host != "" {
		return cfg.Fabric.Host
	}
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return fabricentry.ShortHost(h)
}

func shareConfig(cfg *config.Config) fabricshare.ShareConfig {
	return fabricshare.ShareConfig{Assignment: cfg.Fabric.Assignment, Optional: cfg.Fabric.AssignmentOptional, Host: fabricHost(cfg),
		Interval: cfg.Fabric.Interval, Timeout: cfg.Fabric.Timeout, UmadDir: filepath.Join(cfg.Paths.DevRoot, "infiniband")}
}

// syncMADLocked brings both readers to cfg: each started, told its new
// settings (the share's reader reads its file again: a reload reloads the
// assignment too), restarted with another helper, or stopped. A helper
// starts only when its reader has something to read. Caller holds d.mu.
func (d *Daemon) syncMADLocked(cfg *config.Config) {
	m := &d.mad
	if cfg.MAD.HelperFromAlias && !m.saidAlias {
		m.saidAlias = true
		d.log.Info("[farEnd] helper is an alias of [mad] helper, which both MAD readers use: rename the key", "helper", cfg.MAD.Helper)
	}
	path := helperPath(cfg)
	switch {
	case !cfg.FarEndOn():
		if m.peer != nil {
			d.log.Info("the far end of the InfiniBand ports is no longer read", "reason", "[farEnd] enabled = false or the check is off")
		}
		d.stopPeerLocked()
	case m.peer != nil && m.peerHelper == path:
		m.peer.Configure(peerConfig(cfg))
	default:
		d.stopPeerLocked()
		log := d.log.With("component", "far-end")
		m.peer, m.peerHelper = farend.StartPeerReader(peerConfig(cfg), mad.New(mad.Config{Path: path, Log: log}), log), path
		d.run.UseFarEnd(m.peer)
		d.log.Info("reading the far end of the InfiniBand ports", "helper", path, "interval", cfg.FarEnd.Interval)
	}
	r := m.share.Load()
	switch {
	case cfg.Fabric.Assignment == "":
		if r != nil {
			d.log.Info("this host's share of the fabric is no longer read", "reason", "[fabric] assignment = \"\"")
		}
		d.stopShareLocked()
	case r != nil && m.shareHelper == path:
		r.Configure(shareConfig(cfg))
	default:
		d.stopShareLocked()
		log := d.log.With("component", "fabric-share")
		m.share.Store(fabricshare.StartShareReader(shareConfig(cfg), mad.New(mad.Config{Path: path, Log: log}), log))
		m.shareHelper = path
	}
}

// stopMADLocked stops both readers. Caller holds d.mu.
func (d *Daemon) stopMADLocked() {
	d.stopPeerLocked()
	d.stopShareLocked()
}

// stopPeerLocked takes the far end's reader off the cycle and closes it.
// Caller holds d.mu.
func (d *Daemon) stopPeerLocked() {
	m := &d.mad
	d.run.UseFarEnd(nil)
	if m.peer == nil {
		return
	}
	d.closeReaderLocked(m.peer.Close)
	m.peer, m.peerHelper = nil, ""
}

// stopShareLocked closes the share's reader. Caller holds d.mu.
func (d *Daemon) stopShareLocked() {
	r := d.mad.share.Swap(nil)
	d.mad.shareHelper = ""
	if r == nil {
		return
	}
	d.closeReaderLocked(r.Close)
}

// closeReaderLocked closes a reader on a goroutine of its own, since it
// may be waiting on its helper. Caller holds d.mu.
func (d *Daemon) closeReaderLocked(closeReader func()) {
	done := make(chan struct{})
	go func() { closeReader(); close(done) }()
	// Only the stops still under way are kept (reload after reload).
	d.mad.stops = slices.DeleteFunc(d.mad.stops, func(c chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	})
	d.mad.stops = append(d.mad.stops, done)
}

// awaitMAD waits, at shutdown, for stopped readers to end their helpers,
// at most within.
func (d *Daemon) awaitMAD(within time.Duration) {
	deadline := time.After(within)
	for _, done := range d.mad.stops {
		select {
		case <-done:
		case <-deadline:
			return
		}
	}
}

// fabricReading is the share's latest reading, nil when none is read;
// lock-free, for /metrics.
func (d *Daemon) fabricReading() *fabricshare.ShareReading {
	if r := d.mad.share.Load(); r != nil {
		return r.Latest()
	}
	return nil
}
