package daemon

// RetryRejected asks every running sink to offer its parked (rejected as
// invalid) events again, and returns how many are parked. Reload does it
// too: the usual fix for a rejection is a configuration change.
func (d *Daemon) RetryRejected() int { return d.sinks.RetryRejected() }
