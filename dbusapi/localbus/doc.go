// Package localbus runs a private, permissive, system-type dbus-daemon in a
// directory of the caller's, so the demo and measurement tools can exercise
// nichealthd's D-Bus API without configuring (or touching) the host's bus.
// Tests that need the project's real policy use dbusapi/dbustest instead.
package localbus
