package observe

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology/reader"
)

// A RoCE port's netdev files (operstate, carrier_changes, statistics/*)
// live under class/net, which on a real host is sysfs whatever the rest of
// the configured tree is. They are kept open exactly where they are on
// sysfs (the netdev's own directory is asked, following the class/net
// link), and a netdev that disappears under its descriptors (deleted,
// renamed by udev, moved to another namespace) makes the kept pread fail:
// the reader then releases the descriptor and reopens by path, and the
// port keeps its last known operstate rather than being judged from the
// failure.

// netdevOnSysfs reports whether pp's netdev directory is on sysfs.
func (o *Observer) netdevOnSysfs(pp *portPlan) bool {
	return pp.NetDev != "" && reader.IsSysfs(filepath.Join(o.cfg.Paths.ClassNet, pp.NetDev))
}

// planOperstate adds pp's netdev operstate to the state poll, kept open
// where it is on sysfs; nil when the netdev is absent (not in this
// namespace, or gone), which is said once and not read again until the
// next plan build looks for it, like a missing counter file.
func (o *Observer) planOperstate(pp *portPlan, ow owner) *reader.File {
	path := filepath.Join(o.cfg.Paths.ClassNet, pp.NetDev, "operstate")
	if _, err := os.Stat(path); err != nil {
		o.netdevsAbsent++
		o.netdevAbsent(pp, path, err)
		return nil
	}
	f := o.addFile(path, &o.state, ow)
	f.SetKeepOpen(o.netdevOnSysfs(pp))
	return f
}

// operUnreadable says once per episode that pp's netdev operstate cannot
// be read, with the reason and the fix. A netdev that is gone asks for one
// rediscovery: after a udev rename the device's net/ directory has the
// new name.
func (o *Observer) operUnreadable(pp *portPlan) {
	err := pp.oper.Err
	if o.netdevUnreadable[pp.NetDev] || errors.Is(err, reader.ErrStuck) {
		return // a hung read is reported as its own read-stuck event
	}
	if o.netdevUnreadable == nil {
		o.netdevUnreadable = map[string]bool{}
	}
	o.netdevUnreadable[pp.NetDev] = true
	fix := "check ip link: the netdev is looked up again at the next rediscovery or reload"
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENODEV) {
		fix = "the netdev was removed, renamed (udev) or moved to another network namespace; it is looked up again now (rediscovery) and at every reload"
		o.netdevGone = true
	}
	o.log.Warn("cannot read the RoCE netdev's operstate; the port keeps its last known operstate until it reads again",
		"device", pp.Device.Name, "port", pp.Port.Port.Num, "netdev", pp.NetDev, "check", event.StateCheckFor(pp.Port.Port.LinkLayer),
		"file", pp.oper.Path, "err", err, "fix", fix)
}

// netdevAbsent says once per netdev that it is absent at a plan build.
func (o *Observer) netdevAbsent(pp *portPlan, path string, err error) {
	if o.netdevUnreadable[pp.NetDev] {
		return
	}
	if o.netdevUnreadable == nil {
		o.netdevUnreadable = map[string]bool{}
	}
	o.netdevUnreadable[pp.NetDev] = true
	o.log.Warn("the RoCE port's netdev is absent; its operstate is not read until a rediscovery finds it (discovery looks again every minute, and at every reload)",
		"device", pp.Device.Name, "port", pp.Port.Port.Num, "netdev", pp.NetDev, "check", event.StateCheckFor(pp.Port.Port.LinkLayer),
		"file", path, "err", err,
		"fix", "the netdev is not in this network namespace (removed, renamed by udev, or moved): check ip link")
}

// operReadable ends the episode operUnreadable opened.
func (o *Observer) operReadable(pp *portPlan) {
	if !o.netdevUnreadable[pp.NetDev] {
		return
	}
	delete(o.netdevUnreadable, pp.NetDev)
	o.log.Info("the RoCE netdev's operstate reads again", "device", pp.Device.Name, "port", pp.Port.Port.Num, "netdev", pp.NetDev)
}
