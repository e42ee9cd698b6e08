package daemon

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/daemon/config"
	"github.com/nichealth/nichealthd/topology/reader"
)

// readerOptions is how the configuration tunes the reader: the deadline,
// the stuck bound, descriptors kept open on real sysfs only, the parked
// files' re-probe interval, and the sysfs root (the simulator's errno seam
// is active only on a simulated host's tree).
func readerOptions(cfg *config.Config) reader.Options {
	return reader.Options{
		Timeout: cfg.ReadTimeout, MaxStuck: cfg.MaxStuckReads,
		KeepOpen:  reader.IsSysfs(cfg.Paths.SysfsRoot),
		Reprobe:   cfg.ParkReprobe,
		SysfsRoot: cfg.Paths.SysfsRoot,
	}
}

// parked reports each file the reader parked once (read-parked, a
// non-fatal condition on the file's port) and clears it (read-resumed)
// the first time the file reads again. Keyed by path, like the stuck
// reads, so a plan rebuilt by a reload or rediscovery does not announce a
// file again. A cycle with nothing parked costs two loads.
func (m *Monitor) parked(files []*reader.File, specs *[]event.Spec) {
	if m.rd.ParkedCount() == 0 && len(m.parkReported) == 0 {
		return
	}
	if m.parkReported == nil {
		m.parkReported = map[string]bool{}
	}
	for _, f := range files {
		if m.parkReported[f.Path] {
			if f.Err == nil {
				delete(m.parkReported, f.Path)
				m.viewChanged = true
				*specs = append(*specs, m.resumedSpec(f))
			}
			continue
		}
		if errors.Is(f.Err, reader.ErrParked) {
			m.parkReported[f.Path] = true
			m.viewChanged = true
			*specs = append(*specs, m.parkedSpec(f))
		}
	}
}

func (m *Monitor) parkedSpec(f *reader.File) event.Spec {
	dev, port, ll := m.fileOwner(f)
	var errno unix.Errno
	errors.As(f.Err, &errno)
	name := unix.ErrnoName(errno)
	m.log.Warn("sysfs file parked: it failed the same way three times in a row and is re-read only every re-probe interval",
		"device", dev, "port", port, "file", f.Path, "errno", name, "reprobe", m.cfg.ParkReprobe.String(), "fix", parkFix(errno))
	return event.Spec{
		Kind: event.KindReadParked, CheckName: checks.DegradationCheckFor(ll), Device: dev, Port: port,
		Message: fmt.Sprintf("Port %s port %d: reading %s fails with %s (%v) %d times in a row; the file is parked: not read each poll, re-read every %v, and what it feeds is not judged until it reads again. %s",
			dev, port, f.Path, name, errno, reader.ParkAfter, m.cfg.ParkReprobe, parkFix(errno)),
		ErrorCode: []string{name},
		Metadata:  map[string]string{"file": f.Path, "errno": name, "reprobe": m.cfg.ParkReprobe.String()},
	}
}

// resumedSpec clears the read-parked condition of f: same check, device,
// port and file.
func (m *Monitor) resumedSpec(f *reader.File) event.Spec {
	dev, port, ll := m.fileOwner(f)
	m.log.Info("parked sysfs file reads again; it is read every poll again", "device", dev, "port", port, "file", f.Path)
	return event.Spec{
		Kind: event.KindReadResumed, CheckName: checks.DegradationCheckFor(ll), IsHealthy: true, Device: dev, Port: port,
		Message:  fmt.Sprintf("Port %s port %d: reading %s works again; the file is no longer parked and is read every poll", dev, port, f.Path),
		Metadata: map[string]string{"file": f.Path},
	}
}

// parkFix is the operator's next step for each parking errno.
func parkFix(errno unix.Errno) string {
	switch errno {
	case unix.EACCES, unix.EPERM:
		return "The function is restricted (a VF, or a PF whose counters the firmware reserves for the host or admin function): exclude the device with nicExclusionRegex, disable the counter under [[counterDetection.counters]], or ignore this condition."
	case unix.EOPNOTSUPP, unix.EINVAL:
		return "The driver or firmware does not support this query on this function (often a restricted VF/PF function): exclude the device with nicExclusionRegex, disable the counter under [[counterDetection.counters]], or ignore this condition."
	case unix.EIO:
		return "The driver or firmware failed the query: check dmesg for mlx5_core command errors and update the driver or NIC firmware (mlxfwmanager); reset the function if it persists."
	}
	return "Check dmesg for the driver's errors on this device."
}
