// Package readfaults reports what the reads themselves say: a sysfs read
// that hangs in the kernel (read-stuck, cleared by read-recovered when it
// returns) and a file the reader parked after failing the same way three
// times (read-parked, cleared by read-resumed when it reads again). Each
// is a non-fatal condition on the file's port under the port's
// degradation check, keyed by the file, so its clear never removes a
// latched counter breach of the same port. A file that leaves the read
// plan clears with it.
package readfaults

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology/reader"
)

// Config is what the messages say of the reads' bounds.
type Config struct {
	ReadTimeout time.Duration
	ParkReprobe time.Duration
}

// Check reports hung and parked reads (step "reads").
type Check struct {
	cfg Config
	log *slog.Logger
	// stuck holds files whose hung read was reported and has not read
	// successfully since; parked those whose parking was reported. Both
	// are keyed by path, so a plan rebuilt by a reload or rediscovery does
	// not announce a file again.
	stuck  map[string]fileRef
	parked map[string]fileRef
	plan   uint64
	seen   bool
}

// fileRef is the port a reported file belongs to: its clear names the
// same port even when the file has left the plan.
type fileRef struct {
	dev       string
	port      int
	linkLayer string
}

// NewCheck returns the check with nothing reported.
func NewCheck(log *slog.Logger) *Check {
	return &Check{log: log, stuck: map[string]fileRef{}, parked: map[string]fileRef{}}
}

// Configure applies the reads' bounds.
func (c *Check) Configure(cfg Config) { c.cfg = cfg }

func (*Check) Step() string { return "reads" }

func (*Check) Serves() []string {
	return []string{event.InfiniBandDegradationCheck, event.EthernetDegradationCheck}
}

// Run reports each hung read once and its return, each parked file once
// and its first good read, and clears what a rebuilt plan no longer reads.
// A cycle with nothing hung or parked costs a pass over its reads.
func (c *Check) Run(cy *checks.Cycle) {
	obs := cy.Obs
	if !c.seen || c.plan != obs.Plan {
		c.seen, c.plan = true, obs.Plan
		c.forgetUnplanned(cy)
	}
	for i := range obs.Reads {
		r := &obs.Reads[i]
		if r.Err == nil {
			if len(c.stuck) == 0 && len(c.parked) == 0 {
				continue
			}
			if ref, ok := c.stuck[r.Path]; ok {
				delete(c.stuck, r.Path)
				c.log.Info("stuck sysfs read returned; the file is monitored again", "file", r.Path)
				cy.Emit(c.recoveredSpec(r.Path, ref, "reading %s works again; the file is monitored again"))
			}
			if ref, ok := c.parked[r.Path]; ok {
				delete(c.parked, r.Path)
				cy.ViewChanged()
				cy.Emit(c.resumedSpec(r.Path, ref, "reading %s works again; the file is no longer parked and is read every poll"))
			}
			continue
		}
		if _, ok := c.stuck[r.Path]; !ok && errors.Is(r.Err, reader.ErrStuck) {
			// Once per episode, whether this read hung or was skipped
			// because an earlier read of the path still hangs (one
			// started by discovery, or by a plan a reload rebuilt).
			c.stuck[r.Path] = fileRef{dev: r.Device, port: r.Port, linkLayer: r.LinkLayer}
			cy.Emit(c.stuckSpec(r))
		}
		if _, ok := c.parked[r.Path]; !ok && errors.Is(r.Err, reader.ErrParked) {
			c.parked[r.Path] = fileRef{dev: r.Device, port: r.Port, linkLayer: r.LinkLayer}
			cy.ViewChanged()
			cy.Emit(c.parkedSpec(r))
		}
	}
}

// forgetUnplanned clears the parked and stuck conditions of each file a
// rebuilt plan no longer reads (a reload disabled its counter,
// rediscovery dropped its device): nothing would read it again, so
// nothing else would ever clear them. Should the file come back still
// failing or hung, the reader still has it parked or stuck and it is
// reported again.
func (c *Check) forgetUnplanned(cy *checks.Cycle) {
	for path, ref := range c.parked {
		if cy.Obs.Planned(path) {
			continue
		}
		delete(c.parked, path)
		cy.ViewChanged()
		cy.Emit(c.resumedSpec(path, ref, "%s is no longer read (the configuration or the device set changed); its parked condition is cleared"))
	}
	for path, ref := range c.stuck {
		if cy.Obs.Planned(path) {
			continue
		}
		delete(c.stuck, path)
		cy.ViewChanged()
		cy.Emit(c.recoveredSpec(path, ref, "%s is no longer read (the configuration or the device set changed); its hung-read condition is cleared"))
	}
}

// recoveredSpec clears the read-stuck event of path: same check, device,
// port and file, so a consumer keyed on them sees the condition end. why
// is a format with one %s, the path.
func (c *Check) recoveredSpec(path string, ref fileRef, why string) event.Spec {
	return event.Spec{
		Kind: event.KindReadRecovered, CheckName: event.DegradationCheckFor(ref.linkLayer), IsHealthy: true, Device: ref.dev, Port: ref.port,
		Message: fmt.Sprintf("Port %s port %d: ", ref.dev, ref.port) + fmt.Sprintf(why, path),
		// The file's path is the condition's error code: a clear by
		// entity and error code (NVSentinel, DESIGN.md difference 13)
		// removes this condition, never a latched breach of the port.
		ErrorCode: []string{path},
		Metadata:  map[string]string{"file": path},
		Condition: condition.OfFile(ref.dev, ref.port, path),
	}
}

func (c *Check) stuckSpec(r *observe.Read) event.Spec {
	what := "the file is skipped until the read returns"
	if r.Source {
		// A driver call (ETHTOOL_GSTATS), named "ethtool:<netdev>".
		what = "the driver statistics are skipped until the call returns"
	}
	return event.Spec{
		Kind: event.KindReadStuck, CheckName: event.DegradationCheckFor(r.LinkLayer), Device: r.Device, Port: r.Port, ErrorCode: []string{r.Path},
		Message: fmt.Sprintf("Port %s port %d: reading %s did not return within %v; %s and the rest of the node stays monitored. A read that hangs usually means the HCA firmware stopped answering: check dmesg for mlx5_core command timeouts",
			r.Device, r.Port, r.Path, c.cfg.ReadTimeout, what),
		Metadata:  map[string]string{"file": r.Path, "timeout": c.cfg.ReadTimeout.String()},
		Condition: condition.OfFile(r.Device, r.Port, r.Path),
	}
}

func (c *Check) parkedSpec(r *observe.Read) event.Spec {
	var errno unix.Errno
	errors.As(r.Err, &errno)
	name := unix.ErrnoName(errno)
	c.log.Warn("sysfs file parked: it failed the same way three times in a row and is re-read only every re-probe interval",
		"device", r.Device, "port", r.Port, "file", r.Path, "errno", name, "reprobe", c.cfg.ParkReprobe.String(), "fix", parkFix(errno))
	return event.Spec{
		Kind: event.KindReadParked, CheckName: event.DegradationCheckFor(r.LinkLayer), Device: r.Device, Port: r.Port,
		Message: fmt.Sprintf("Port %s port %d: reading %s fails with %s (%v) %d times in a row; the file is parked: not read each poll, re-read every %v, and what it feeds is not judged until it reads again. %s",
			r.Device, r.Port, r.Path, name, errno, reader.ParkAfter, c.cfg.ParkReprobe, parkFix(errno)),
		// The errno says why; the path is the condition's identity, which
		// its clear repeats (DESIGN.md difference 13).
		ErrorCode: []string{name, r.Path},
		Metadata:  map[string]string{"file": r.Path, "errno": name, "reprobe": c.cfg.ParkReprobe.String()},
		Condition: condition.OfFile(r.Device, r.Port, r.Path),
	}
}

// resumedSpec clears the read-parked condition of path: same check,
// device, port and file. why is a format with one %s, the path.
func (c *Check) resumedSpec(path string, ref fileRef, why string) event.Spec {
	msg := fmt.Sprintf(why, path)
	c.log.Info("parked sysfs file cleared", "device", ref.dev, "port", ref.port, "file", path, "reason", msg)
	return event.Spec{
		Kind: event.KindReadResumed, CheckName: event.DegradationCheckFor(ref.linkLayer), IsHealthy: true, Device: ref.dev, Port: ref.port,
		Message: fmt.Sprintf("Port %s port %d: %s", ref.dev, ref.port, msg),
		// The file's path only: a clear by entity and error code
		// (NVSentinel, DESIGN.md difference 13) must remove this
		// condition and never a latched counter breach of the port.
		ErrorCode: []string{path},
		Metadata:  map[string]string{"file": path},
		Condition: condition.OfFile(ref.dev, ref.port, path),
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
