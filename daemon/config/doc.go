// Package config loads and validates /etc/nichealthd/config.toml. Every key
// has a built-in default, so an empty file is a valid configuration; a bad
// value is reported with the file, the key and the reason, and never
// replaces a running configuration.
package config
