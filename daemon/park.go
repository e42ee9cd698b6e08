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
// the stuck bound, descriptors kept open on real sysfs only, and the
// parked files' re-probe interval.
func readerOptions(cfg *config.Config) reader.Options {
	return reader.Options{
		Timeout: cfg.ReadTimeout, MaxStuck: cfg.MaxStuckReads,
		KeepOpen: reader.IsSysfs(cfg.Paths.SysfsRoot),
		Reprobe:  cfg.ParkReprobe,
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
		m.parkReported = map[string]fileRef{}
	}
	for _, f := range files {
		if pf, ok := m.parkReported[f.Path]; ok {
			if f.Err == nil {
				delete(m.parkReported, f.Path)
				m.viewChanged = true
				*specs = append(*specs, m.resumedSpec(f.Path, pf, "reading %s works again; the file is no longer parked and is read every poll"))
			}
			continue
		}
		if errors.Is(f.Err, reader.ErrParked) {
			dev, port, ll := m.fileOwner(f)
			m.parkReported[f.Path] = fileRef{dev: dev, port: port, linkLayer: ll}
			m.viewChanged = true
			*specs = append(*specs, m.parkedSpec(f))
		}
	}
}

// fileRef is the port a reported file condition (parked, stuck) belongs
// to: its clear must name the same port even when the file has left the
// plan.
type fileRef struct {
	dev       string
	port      int
	linkLayer string
}

// forgetUnplannedFiles clears, with the next cycle, the parked and
// stuck conditions of each file a rebuilt plan no longer reads (a reload
// disabled its counter, rediscovery dropped its device): nothing would
// read it again, so nothing else would ever clear them. Should the file
// come back still failing or hung, the reader still has it parked or
// stuck and it is reported again.
func (m *Monitor) forgetUnplannedFiles() {
	if len(m.parkReported) == 0 && len(m.stuckReported) == 0 {
		return
	}
	planned := make(map[string]bool, len(m.files))
	for _, f := range m.files {
		planned[f.Path] = true
	}
	for path, pf := range m.parkReported {
		if planned[path] {
			continue
		}
		delete(m.parkReported, path)
		m.viewChanged = true
		m.pendingSpecs = append(m.pendingSpecs, m.resumedSpec(path, pf, "%s is no longer read (the configuration or the device set changed); its parked condition is cleared"))
	}
	for path, ref := range m.stuckReported {
		if planned[path] {
			continue
		}
		delete(m.stuckReported, path)
		m.viewChanged = true
		m.pendingSpecs = append(m.pendingSpecs, m.readRecoveredSpec(path, ref, "%s is no longer read (the configuration or the device set changed); its hung-read condition is cleared"))
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
		// The errno says why; the path is the condition's identity, which
		// its clear repeats (DESIGN.md difference 13).
		ErrorCode: []string{name, f.Path},
		Metadata:  map[string]string{"file": f.Path, "errno": name, "reprobe": m.cfg.ParkReprobe.String()},
	}
}

// resumedSpec clears the read-parked condition of path: same check,
// device, port and file. why is a format with one %s, the path.
func (m *Monitor) resumedSpec(path string, pf fileRef, why string) event.Spec {
	msg := fmt.Sprintf(why, path)
	m.log.Info("parked sysfs file cleared", "device", pf.dev, "port", pf.port, "file", path, "reason", msg)
	return event.Spec{
		Kind: event.KindReadResumed, CheckName: checks.DegradationCheckFor(pf.linkLayer), IsHealthy: true, Device: pf.dev, Port: pf.port,
		Message: fmt.Sprintf("Port %s port %d: %s", pf.dev, pf.port, msg),
		// The file's path only: a clear by entity and error code
		// (NVSentinel, DESIGN.md difference 13) must remove this
		// condition and never a latched counter breach of the port.
		ErrorCode: []string{path},
		Metadata:  map[string]string{"file": path},
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
