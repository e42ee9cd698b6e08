// Package notify speaks the sd_notify protocol to the service manager:
// readiness, one-line status, reload and stop notices, and watchdog pings
// gated on real progress of the poll loop, so that a wedged loop lets
// systemd's WatchdogSec= restart the daemon (DESIGN.md section 4).
//
// Everything is a safe no-op when the daemon was not started by systemd
// (NOTIFY_SOCKET unset). Protocol reference:
// https://www.freedesktop.org/software/systemd/man/sd_notify.html
package notify
