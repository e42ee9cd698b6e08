// Package debian holds the Debian package's control files; its tests check
// that the copyright file names every Go module linked into the binaries
// and that the changelog's newest entry is the version the binaries print.
package debian
