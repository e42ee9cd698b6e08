package daemon

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/checks"
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
func (m *Monitor) netdevOnSysfs(pp *portPlan) bool {
	return pp.netdev != "" && reader.IsSysfs(filepath.Join(m.cfg.Paths.ClassNet, pp.netdev))
}

// planOperstate adds pp's netdev operstate to the state poll, kept open
// where it is on sysfs; nil when the netdev is absent (not in this
// namespace, or gone), which is said once and not read again until the
// next plan build looks for it, like a missing counter file.
func (m *Monitor) planOperstate(pp *portPlan) *reader.File {
	path := filepath.Join(m.cfg.Paths.ClassNet, pp.netdev, "operstate")
	if _, err := os.Stat(path); err != nil {
		m.netdevAbsent(pp, path, err)
		return nil
	}
	f := m.addFile(path, &m.stateFiles)
	f.SetKeepOpen(m.netdevOnSysfs(pp))
	return f
}

// rebuildAfterCycle rebuilds the read plan once a cycle is over when it
// must: a netdev disappeared (a rediscovery finds its new name after a
// udev rename, or plans the port without it), or a check failed (guard.go:
// its reads and driver calls stop; a source that panics would otherwise
// panic on the worker every tick).
func (m *Monitor) rebuildAfterCycle() {
	switch {
	case m.netdevGone:
		m.netdevGone, m.guard.replan = false, false
		m.rediscover()
	case m.guard.replan:
		m.guard.replan = false
		m.buildPlan()
	}
}

// operUnreadable says once per episode that pp's netdev operstate cannot
// be read, with the reason and the fix. A netdev that is gone asks for one
// rediscovery: after a udev rename the device's net/ directory has the
// new name.
func (m *Monitor) operUnreadable(pp *portPlan) {
	err := pp.oper.Err
	if m.netdevUnreadable[pp.netdev] || errors.Is(err, reader.ErrStuck) {
		return // a hung read is reported as its own read-stuck event
	}
	if m.netdevUnreadable == nil {
		m.netdevUnreadable = map[string]bool{}
	}
	m.netdevUnreadable[pp.netdev] = true
	fix := "check ip link: the netdev is looked up again at the next rediscovery or reload"
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ENODEV) {
		fix = "the netdev was removed, renamed (udev) or moved to another network namespace; it is looked up again now (rediscovery) and at every reload"
		m.netdevGone = true
	}
	m.log.Warn("cannot read the RoCE netdev's operstate; the port keeps its last known operstate until it reads again",
		"device", pp.dev.Name, "port", pp.port.Num, "netdev", pp.netdev, "check", checks.StateCheckFor(pp.port.LinkLayer),
		"file", pp.oper.Path, "err", err, "fix", fix)
}

// netdevAbsent says once per netdev that it is absent at a plan build.
func (m *Monitor) netdevAbsent(pp *portPlan, path string, err error) {
	if m.netdevUnreadable[pp.netdev] {
		return
	}
	if m.netdevUnreadable == nil {
		m.netdevUnreadable = map[string]bool{}
	}
	m.netdevUnreadable[pp.netdev] = true
	m.log.Warn("the RoCE port's netdev is absent; its operstate is not read until the next rediscovery or reload finds it",
		"device", pp.dev.Name, "port", pp.port.Num, "netdev", pp.netdev, "check", checks.StateCheckFor(pp.port.LinkLayer),
		"file", path, "err", err,
		"fix", "the netdev is not in this network namespace (removed, renamed by udev, or moved): check ip link")
}

// operReadable ends the episode operUnreadable opened.
func (m *Monitor) operReadable(pp *portPlan) {
	if !m.netdevUnreadable[pp.netdev] {
		return
	}
	delete(m.netdevUnreadable, pp.netdev)
	m.log.Info("the RoCE netdev's operstate reads again", "device", pp.dev.Name, "port", pp.port.Num, "netdev", pp.netdev)
}
