// Package config holds the default configuration file that packages install
// as /etc/nichealthd/config.toml. It has no code: its test proves that the
// values the file shows, once uncommented, are exactly the daemon's built-in
// defaults, and that the examples it quotes are accepted.
package config
