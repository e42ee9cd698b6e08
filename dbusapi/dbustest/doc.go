// Package dbustest runs a private system-type D-Bus daemon with the
// project's real policy file, and provides a fake Backend, so tests of the
// D-Bus API, nichealthctl and the daemon talk to a real bus with real
// access control instead of mocks. It is a test-support package: nothing in
// the daemon imports it.
package dbustest
