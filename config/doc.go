// Package config is the configuration's model: it loads and validates
// /etc/nichealthd/config.toml into one immutable value that the daemon
// applies and the checks read. Every key has a built-in default, so an
// empty file is a valid configuration; a bad value is reported with the
// file, the key and the reason, and never replaces a running
// configuration. The tables the file overrides row by row live in
// countertable (the counter table) and patterntable (the kernel-log
// patterns); the checks import them, never the other way round.
package config
