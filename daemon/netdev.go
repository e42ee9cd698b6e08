package daemon

import (
	"errors"
	"io/fs"
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

// addNetdevFile adds a file of pp's netdev to the plan, kept open where it
// is on sysfs.
func (m *Monitor) addNetdevFile(pp *portPlan, path string, cadence *[]*reader.File) *reader.File {
	f := m.addFile(path, cadence)
	f.SetKeepOpen(m.netdevOnSysfs(pp))
	return f
}

// operUnreadable says once per episode that pp's netdev operstate cannot
// be read, with the reason and the fix.
func (m *Monitor) operUnreadable(pp *portPlan) {
	if m.netdevUnreadable[pp.netdev] {
		return
	}
	if m.netdevUnreadable == nil {
		m.netdevUnreadable = map[string]bool{}
	}
	m.netdevUnreadable[pp.netdev] = true
	err := pp.oper.Err
	fix := "check ip link: the netdev is looked up again at the next rediscovery or reload"
	switch {
	case errors.Is(err, reader.ErrStuck):
		return // reported as its own read-stuck event
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, unix.ENODEV):
		fix = "the netdev was removed, renamed (udev) or moved to another network namespace; " + fix
	}
	m.log.Warn("cannot read the RoCE netdev's operstate; the port keeps its last known operstate until it reads again",
		"device", pp.dev.Name, "port", pp.port.Num, "netdev", pp.netdev, "check", checks.StateCheckFor(pp.port.LinkLayer),
		"file", pp.oper.Path, "err", err, "fix", fix)
}

// operReadable ends the episode operUnreadable opened.
func (m *Monitor) operReadable(pp *portPlan) {
	if !m.netdevUnreadable[pp.netdev] {
		return
	}
	delete(m.netdevUnreadable, pp.netdev)
	m.log.Info("the RoCE netdev's operstate reads again", "device", pp.dev.Name, "port", pp.port.Num, "netdev", pp.netdev)
}
