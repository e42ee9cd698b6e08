package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/checks/runner"
	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/persist"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/gpumeta"
)

// localCheck judges the host here, without the daemon's answer: as the
// daemon will at its first poll after a restart when a state file is
// given (DESIGN.md difference 17), as at a first start otherwise.
type localCheck struct {
	cfgPath, root string
	// stateFile is the daemon's state file, read and never written ("":
	// none is read).
	stateFile string
	// daemon says why the daemon did not answer ("" when it was not asked:
	// --offline, --root). Set, it opens the summary line and the result is
	// at least WARNING.
	daemon string
	perf   bool
}

// stateInfo is what the check made of the state file (--json "state").
type stateInfo struct {
	Path string `json:"path"`
	// Status is "this boot" (the daemon's memory is used), "earlier boot"
	// (cleared as the daemon clears it after a reboot; the expected
	// inventory still counts), "missing", "unusable" (corrupt, or written
	// by a newer nichealthd) or "unreadable".
	Status  string     `json:"status"`
	Reason  string     `json:"reason,omitempty"`
	SavedAt *time.Time `json:"savedAt,omitempty"`
	// Inventory is the expected NIC inventory file that was read.
	Inventory string `json:"inventory,omitempty"`
}

// bad reports a state file the daemon's memory could not be had from
// (not one of an earlier boot, which the daemon itself would clear): it
// is said on the summary line and makes the result at least WARNING.
func (s *stateInfo) bad() bool {
	return s != nil && s.Status != "this boot" && s.Status != "earlier boot"
}

// maxReason bounds an error quoted on the summary line, which NRPE before
// v3 cuts at 1 KiB.
const maxReason = 200

func clip(s string) string {
	if len(s) <= maxReason {
		return s
	}
	return s[:maxReason] + "..."
}

func (l localCheck) run() (checkResult, error) {
	res := checkResult{Source: "sysfs", Ports: []checkEntry{}, Daemon: l.daemon}
	if l.daemon != "" {
		res.leadText, res.floor = l.daemon, nagiosWarning
	}
	cfg, err := config.Load(l.cfgPath)
	if err != nil {
		return res, err
	}
	if l.root != "" {
		if st, err := os.Stat(l.root); err != nil || !st.IsDir() {
			return res, fmt.Errorf("--root %s is not a directory", l.root)
		}
		cfg.Paths = topology.Paths{SysfsRoot: filepath.Join(l.root, "sys"), ProcfsRoot: filepath.Join(l.root, "proc"),
			DevRoot: filepath.Join(l.root, "dev")}.WithDefaults()
		cfg.MetadataPath = filepath.Join(l.root, gpumeta.DefaultMetadataPath)
	}
	prior := runner.Prior{Boot: observe.BootFresh}
	if l.stateFile != "" {
		var notes []string
		res.State, prior, notes = readPrior(l.stateFile, cfg.BootIDPath())
		res.Notes = append(res.Notes, notes...)
		what := res.State.describe(l.daemon != "")
		switch {
		case l.daemon != "":
			res.leadText += " (" + what + ")"
		case res.State.bad():
			res.leadText, res.floor = what, nagiosWarning
		default:
			res.Notes = append(res.Notes, what)
		}
	}
	if prior.Boot == observe.BootSame {
		res.Source = "state"
	} else if !l.perf {
		// Counters cannot be judged from one reading; read them only for
		// perfdata. With the daemon's memory they are judged (a latch is
		// kept only while its counter is enabled).
		cfg.CountersEnabled = false
	}
	res.leadText = pluginText(res.leadText)
	snap, notes, err := runner.AsRestarted(cfg, prior, nil)
	res.Notes = append(res.Notes, notes...)
	if err != nil {
		return res, fmt.Errorf("cannot list the RDMA devices: %w (is nichealthd's sysfsRoot right, and is the mlx5_ib module loaded?)", err)
	}
	views := dbusapi.PortViewsOf(snap)
	for _, pv := range views {
		e := entryFromView(pv, l.perf)
		if pv.State == "" && pv.PhysState == "" && len(pv.Conditions) == 0 {
			e.Reasons = []string{fmt.Sprintf("Port %s port %d: cannot read state/phys_state in %s/%s/ports/%d/",
				pv.Device, pv.Port, cfg.Paths.ClassInfiniBand, pv.Device, pv.Port)}
		}
		res.Ports = append(res.Ports, e)
	}
	res.Ports = append(res.Ports, offPortEntries(dbusapi.ManagerViewOf(snap, time.Time{}).Conditions, views)...)
	res.finish(l.perf)
	return res, nil
}

// readPrior reads the state file and the expected inventory beside it as
// the daemon's start-up does (persist.Peek instead of its Load: nothing is
// moved, cleaned or written), and ties the state to the running boot as
// the daemon does (persist.ApplyBoot, on the copy in memory).
func readPrior(path, bootIDPath string) (*stateInfo, runner.Prior, []string) {
	info := &stateInfo{Path: path}
	prior := runner.Prior{Boot: observe.BootFresh}
	var notes []string
	invPath := persist.InventoryPath(path)
	switch b, err := persist.PeekCrossBoot(invPath); {
	case err != nil:
		notes = append(notes, fmt.Sprintf("cannot read the expected NIC inventory: %v; a NIC missing since the last boot cannot be recognised", err))
	case b != nil:
		prior.InventoryPath, prior.Inventory, info.Inventory = invPath, b, invPath
	}
	st, rep, err := persist.Peek(path)
	switch {
	case errors.Is(err, persist.ErrNewerSchema):
		info.Status, info.Reason = "unusable", clip(err.Error())
		return info, prior, notes
	case err != nil:
		// The path is said once, by the caller; the reason is what failed.
		reason := err.Error()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			reason = pe.Err.Error()
		}
		info.Status, info.Reason = "unreadable", clip(reason)
		if errors.Is(err, os.ErrPermission) {
			info.Reason += ": run the check as root or as nichealthd"
		}
		return info, prior, notes
	case rep.Status == persist.LoadFresh:
		info.Status = "missing"
		return info, prior, notes
	case rep.Status == persist.LoadCorrupt:
		info.Status, info.Reason = "unusable", clip(rep.Reason)
		return info, prior, notes
	}
	if len(rep.Dropped) > 0 {
		notes = append(notes, "state file entries dropped as invalid: "+strings.Join(rep.Dropped, "; "))
	}
	if fi, err := os.Stat(path); err == nil {
		t := fi.ModTime()
		info.SavedAt = &t
	}
	bootID, err := persist.ReadBootID(bootIDPath)
	if err != nil {
		info.Status, info.Reason = "unusable", clip("cannot tell its boot: "+err.Error())
		return info, prior, notes
	}
	prior.BootID = bootID
	switch persist.ApplyBoot(st, bootID) {
	case persist.BootSame:
		info.Status = "this boot"
		prior.Boot = observe.BootSame
		prior.Section = func(s string) []byte { return st.Section(s) }
		prior.Health = st.Health
	case persist.BootRebooted:
		info.Status = "earlier boot"
		prior.Boot = observe.BootRebooted
	default:
		// A file without a boot ID cannot prove its observations are of
		// this boot: the daemon starts fresh from it.
		info.Status, info.Reason = "unusable", "it has no boot ID"
	}
	return info, prior, notes
}

// describe says in a few words where the verdict comes from; ofDaemon
// says it follows "nichealthd is not running" ("its state file").
func (s *stateInfo) describe(ofDaemon bool) string {
	file := "state file " + s.Path
	if ofDaemon {
		file = "its state file " + s.Path
	}
	fresh := ": verdict from sysfs as at a first start"
	switch s.Status {
	case "this boot":
		saved := ""
		if s.SavedAt != nil {
			saved = fmt.Sprintf(", saved %s ago,", time.Since(*s.SavedAt).Round(time.Second))
		}
		return fmt.Sprintf("verdict from %s%s and sysfs, as at its restart", file, saved)
	case "earlier boot":
		if s.Inventory != "" {
			return file + " is from an earlier boot: verdict from sysfs and the expected NIC inventory, as at a first start after a reboot"
		}
		return file + " is from an earlier boot: verdict from sysfs, as at a first start after a reboot"
	case "missing":
		return file + " is missing" + fresh
	case "unreadable":
		return "cannot read " + file + " (" + s.Reason + ")" + fresh
	}
	return file + " is unusable (" + s.Reason + ")" + fresh
}

// describe says on the summary line why the daemon's verdict is missing.
// Whether a daemon process is alive is read from its outbox lock
// (probeDaemonLock): "not running" is said only when nothing says
// otherwise.
func (u unanswered) describe(stateFile string) string {
	lock, pid := probeDaemonLock(stateFile, "/proc")
	running := "nichealthd is running"
	if pid > 0 {
		running = fmt.Sprintf("nichealthd (pid %d) is running", pid)
	}
	switch u.kind {
	case notOnBus:
		if lock == lockHeld {
			return running + " but not on the system bus"
		}
		return "nichealthd is not running"
	case busUnreachable:
		switch lock {
		case lockHeld:
			return running + " but the system bus is unreachable"
		case lockFree, lockNeverTaken:
			return "nichealthd is not running and the system bus is unreachable"
		}
		return "nichealthd cannot be reached: the system bus is unreachable"
	case starting:
		return "nichealthd is starting (its first poll is not complete)"
	}
	return "nichealthd is not answering over D-Bus"
}
