package notify

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	sddaemon "github.com/coreos/go-systemd/v22/daemon"
)

// Notifier sends sd_notify messages for one daemon process. Its methods are
// safe for concurrent use.
//
// Every send method follows one contract, the one of go-systemd's SdNotify
// folded into a single error:
//
//	nil, nothing sent   - not supported: NOTIFY_SOCKET is unset, the daemon
//	                      was not started by systemd as Type=notify (a shell,
//	                      a test, a container without systemd);
//	error               - supported, but the datagram could not be sent
//	                      (socket gone, permission denied); the caller logs
//	                      it, nothing else depends on it;
//	nil, sent           - the service manager has the message.
//
// Enabled tells the first case from the last. NOTIFY_SOCKET is read at each
// send, as go-systemd does, so the environment must not be cleared while
// the daemon runs.
type Notifier struct {
	logger   *slog.Logger
	watchdog time.Duration // full WATCHDOG_USEC; 0 when disabled

	mu         sync.Mutex
	lastStatus string
	haveStatus bool
}

// New reads the watchdog settings (WATCHDOG_USEC, WATCHDOG_PID) once. A
// malformed WATCHDOG_USEC disables the watchdog pings and is logged, so a
// typo in a drop-in does not stop the daemon from starting; systemd then
// restarts it after WatchdogSec=, which points the operator at the unit.
func New(logger *slog.Logger) *Notifier {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	wd, err := sddaemon.SdWatchdogEnabled(false)
	if err != nil {
		logger.Warn("watchdog settings from the service manager are unusable; not sending watchdog pings",
			"WATCHDOG_USEC", os.Getenv("WATCHDOG_USEC"), "WATCHDOG_PID", os.Getenv("WATCHDOG_PID"),
			"err", err, "fix", "set WatchdogSec= in the unit to a positive duration")
		wd = 0
	}
	return &Notifier{logger: logger, watchdog: wd}
}

// Enabled reports whether a service manager listens (NOTIFY_SOCKET is set).
func (n *Notifier) Enabled() bool { return os.Getenv("NOTIFY_SOCKET") != "" }

// Ready sends READY=1, with STATUS= when status is not empty. Call it after
// the first complete poll (DESIGN.md section 4) and again after each reload
// (the manager leaves the "reloading" state only on READY=1).
func (n *Notifier) Ready(status string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	msg := sddaemon.SdNotifyReady
	if status != "" {
		status = oneLine(status)
		msg += "\nSTATUS=" + status
	}
	sent, err := n.send(msg)
	if err == nil && sent && status != "" {
		n.lastStatus, n.haveStatus = status, true
	}
	return err
}

// Status sends STATUS=<status> when it differs from the last status sent,
// so a poll loop may call it every cycle without flooding the manager.
// Newlines in status are folded to spaces: systemctl status shows one line.
// An unchanged status follows the "nil, nothing sent" case.
func (n *Notifier) Status(status string) error {
	status = oneLine(status)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.haveStatus && status == n.lastStatus {
		return nil
	}
	sent, err := n.send("STATUS=" + status)
	if err == nil && sent {
		n.lastStatus, n.haveStatus = status, true
	}
	return err
}

// Reloading sends RELOADING=1 with MONOTONIC_USEC=, which systemd requires
// to match the notice with the reload it started. systemd 252 has no
// Type=notify-reload, so the daemon sends this itself on SIGHUP; it must
// follow with Ready when the reload is done, whether it succeeded or not.
func (n *Notifier) Reloading() error {
	// SdNotifyMonotonicUsec already ends in a newline.
	_, err := n.send(sddaemon.SdNotifyReloading + "\n" + sddaemon.SdNotifyMonotonicUsec())
	return err
}

// Stopping sends STOPPING=1 at the start of an orderly shutdown.
func (n *Notifier) Stopping() error {
	_, err := n.send(sddaemon.SdNotifyStopping)
	return err
}

// Watchdog sends WATCHDOG=1 unconditionally. The daemon should not call it
// directly: ProgressWatchdog calls it only while the poll loop progresses.
func (n *Notifier) Watchdog() error {
	_, err := n.send(sddaemon.SdNotifyWatchdog)
	return err
}

// WatchdogInterval is how often to ping: half of WATCHDOG_USEC, as
// sd_watchdog_enabled(3) advises, so one late ping is not yet fatal. It is
// 0 when the watchdog is disabled or watches another pid (WATCHDOG_PID).
func (n *Notifier) WatchdogInterval() time.Duration { return n.watchdog / 2 }

// WatchdogTimeout is the full WATCHDOG_USEC: how long systemd waits for a
// ping before it kills the daemon; 0 when disabled.
func (n *Notifier) WatchdogTimeout() time.Duration { return n.watchdog }

func (n *Notifier) send(msg string) (bool, error) {
	sent, err := sddaemon.SdNotify(false, msg)
	if err != nil {
		first, _, _ := strings.Cut(msg, "\n")
		return false, fmt.Errorf("sd_notify %s to NOTIFY_SOCKET=%s: %w", first, os.Getenv("NOTIFY_SOCKET"), err)
	}
	return sent, nil
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(strings.NewReplacer("\r", " ", "\n", " ").Replace(s)), " ")
}
