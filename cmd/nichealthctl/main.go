package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/nichealth/nichealthd/internal/version"
)

// Exit codes, the same for every sub-command so scripts can rely on them.
const (
	exitOK          = 0 // success; for status/ports/port: everything healthy
	exitFailed      = 1 // unhealthy, or the command failed (refused, denied, not found)
	exitUsage       = 2 // bad command line
	exitUnreachable = 3 // no system bus, or nichealthd not running on it
)

// command is one sub-command. run gets the arguments after the command's
// name and returns the exit code.
type command struct {
	summary string
	run     func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// commands is the dispatch table; a new sub-command is one entry here and
// one file beside this one.
func commands() map[string]command {
	return map[string]command{
		"status":     {"overall health, node, version, configuration, last poll", runStatus},
		"ports":      {"table of monitored ports (device, port, role, link layer, state, rate, health)", runPorts},
		"port":       {"details and counters of one port: port DEVICE PORT", runPort},
		"cables":     {"one line per cable: local port, the switch port at its other end, which way errors flow and the part to replace", runCables},
		"events":     {"recent health events: events [--since SEQ] [--follow: the last 10, then live]", runEvents},
		"ack":        {"acknowledge a latched counter breach: ack DEVICE PORT [COUNTER] (root or nichealth-admin)", runAck},
		"reload":     {"re-read the configuration file (root or nichealth-admin)", runReload},
		"topology":   {"collect, show or parse the GPU/NIC topology (offline)", runTopology},
		"check":      {"Nagios/Icinga plugin: one line, exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (the daemon's state file and sysfs when it is down)", runCheck},
		"wait-ready": {"boot gate: wait until every compute and storage port is up, at its peers' rate, with no condition but non-fatal counter ones (a latched fatal breach holds it; far-end conditions never do): wait-ready [--timeout 5m]", runWaitReady},
		"validate":   {"check a configuration file without applying it: validate [FILE] (offline)", runValidate},
		"module":     {"decode a saved transceiver dump: module decode [--json] FILE (offline)", runModule},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		usage(stdout)
		return exitOK
	case "--version", "-version", "version":
		fmt.Fprintf(stdout, "nichealthctl %s\n", versionString())
		return exitOK
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "nichealthctl: unknown command %q (nichealthctl --help lists them)\n", args[0])
		return exitUsage
	}
	return cmd.run(args[1:], stdin, stdout, stderr)
}

func usage(w io.Writer) {
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("Usage: nichealthctl COMMAND [OPTIONS] [ARGS]\n\nInspect and drive nichealthd, the NIC health daemon, over the system bus.\n\nCommands:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %-11s %s\n", n, cmds[n].summary)
	}
	b.WriteString(`
Options of the daemon commands:
  --json               machine-readable output
  --bus-address ADDR   D-Bus address of the system bus (default: $DBUS_SYSTEM_BUS_ADDRESS,
                       else unix:path=/run/dbus/system_bus_socket)
  nichealthctl COMMAND --help shows a command's own options.

Exit status:
  0  success (status, ports, port: everything healthy)
  1  unhealthy, or the command failed (refused, access denied, no such port)
  2  usage error
  3  the system bus is unreachable or nichealthd is not running

Colours are used only on a terminal and never when NO_COLOR is set.
`)
	io.WriteString(w, b.String())
}

func versionString() string { return version.String() }
