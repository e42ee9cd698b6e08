// Command nichealthctl is the operator's client for nichealthd: it reads the
// daemon's state and events over D-Bus (dbusapi.Client), acknowledges latched
// counter breaches, triggers reloads, and dispatches the offline helpers
// (topology). Each sub-command lives in its own file; main.go holds the
// dispatch table and the exit codes.
package main
