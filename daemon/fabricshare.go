package daemon

import (
	"os"
	"path/filepath"

	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/internal/fabricentry"
	"github.com/nichealth/nichealthd/mad"
	"github.com/nichealth/nichealthd/mad/fabricshare"
)

// fabricRun is the reader of this host's share of the fabric's switch
// ports and the helper it runs: its own helper, not the far end's, so a
// hang reading a distant switch never stalls the far end of the node's
// own cables, nor the reverse.
type fabricRun struct {
	helper string
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

func fabricConfig(cfg *config.Config) fabricshare.ShareConfig {
	return fabricshare.ShareConfig{Assignment: cfg.Fabric.Assignment, Optional: cfg.Fabric.AssignmentOptional, Host: fabricHost(cfg),
		Interval: cfg.Fabric.Interval, Timeout: cfg.Fabric.Timeout, UmadDir: filepath.Join(cfg.Paths.DevRoot, "infiniband")}
}

// syncFabricLocked brings the share's reader to cfg: started, told the
// new file, host and pace (it reads the file again: a reload reloads the
// assignment too), restarted with another helper, or stopped. The helper
// starts only when a list needs reading. Caller holds d.mu.
func (d *Daemon) syncFabricLocked(cfg *config.Config) {
	fr := &d.fabric
	r := d.fabricReader.Load()
	if cfg.Fabric.Assignment == "" {
		if r != nil {
			d.log.Info("this host's share of the fabric is no longer read", "reason", "[fabric] assignment = \"\"")
		}
		d.stopFabricLocked()
		return
	}
	path := helperPath(cfg)
	if r != nil && fr.helper == path {
		r.Configure(fabricConfig(cfg))
		return
	}
	d.stopFabricLocked()
	log := d.log.With("component", "fabric-share")
	client := mad.New(mad.Config{Path: path, Log: log})
	d.fabricReader.Store(fabricshare.StartShareReader(fabricConfig(cfg), client, log))
	fr.helper = path
}

// stopFabricLocked closes the reader as the far end's is closed
// (closeReaderLocked). Caller holds d.mu.
func (d *Daemon) stopFabricLocked() {
	r := d.fabricReader.Swap(nil)
	d.fabric.helper = ""
	if r == nil {
		return
	}
	d.closeReaderLocked(r.Close)
}

// fabricReading is the share's latest reading, nil when none is read;
// lock-free, for /metrics.
func (d *Daemon) fabricReading() *fabricshare.ShareReading {
	if r := d.fabricReader.Load(); r != nil {
		return r.Latest()
	}
	return nil
}
