// Package notifytest is a stand-in for systemd's notification socket in
// tests: a unixgram listener that records every sd_notify datagram with the
// sender's credentials, so tests of this module (and of the daemon run as a
// child process) can assert READY=1, STATUS=, WATCHDOG=1, RELOADING=1 and
// STOPPING=1 exactly as the service manager would receive them.
package notifytest
