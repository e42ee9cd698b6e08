// Package version is the one place nichealthd's version comes from: every
// binary prints it, the daemon publishes it on D-Bus and /metrics, and the
// Makefile and the .deb take their version from it (scripts/version), so
// an operator comparing `nichealthctl --version`, `nichealthd --version`,
// `dpkg -l nichealthd` and the Manager's Version property sees one string.
package version
