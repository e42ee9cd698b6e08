// Package journal writes to the systemd journal over its native protocol:
// a sink that turns each health event into one structured entry (fixed
// MESSAGE_ID per event kind, PRIORITY by severity, every event field as its
// own upper-case field, so `journalctl NIC_DEVICE=mlx5_0 -p warning` works),
// and a slog handler for the daemon's own logs. The operator text behind
// each MESSAGE_ID is the catalog packaging/journal/nichealthd.catalog.
package journal
