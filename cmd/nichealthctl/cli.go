package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/internal/flagdoc"
)

// callTimeout bounds one D-Bus round trip, as the bus's own default does.
const callTimeout = 25 * time.Second

// clientFlags are the options every daemon command takes.
type clientFlags struct {
	json       bool
	busAddress string
}

func newFlagSet(name, usageLine string, stderr io.Writer) (*flag.FlagSet, *clientFlags) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := &clientFlags{}
	fs.BoolVar(&cf.json, "json", false, "machine-readable JSON output")
	fs.StringVar(&cf.busAddress, "bus-address", "", "D-Bus address of the system bus (default $DBUS_SYSTEM_BUS_ADDRESS or the standard socket)")
	fs.Usage = func() {
		// fs.Output(), not stderr: parseArgs holds back what the flag
		// package prints for a value it explains itself.
		fmt.Fprintf(fs.Output(), "Usage: nichealthctl %s\n\nOptions:\n", usageLine)
		flagdoc.PrintOptions(fs.Output(), fs)
	}
	return fs, cf
}

// parseArgs parses flags given anywhere among the positional arguments
// (operators type "port mlx5_0 1 --json" as often as "port --json mlx5_0 1").
// It returns the positional arguments, or an exit code when parsing ended
// the command (--help: 0, a bad flag: 2).
func parseArgs(fs *flag.FlagSet, args []string) ([]string, int, bool) {
	var pos []string
	for {
		if err := parseExplained(fs, args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK, false
			}
			return nil, exitUsage, false
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, 0, true
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), 0, true
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// explainedValue is the flag package's line for a value its flag's own
// type refused with an explanation that names the flag ("--timeout 5: a
// duration needs a unit, e.g. 5s", internal/flagdoc).
var explainedValue = regexp.MustCompile(`^invalid value ".*" for flag -\S+: (--\S+ .*)\n`)

// parseExplained is fs.Parse, except that a value refused with its own
// explanation is said in one line, with where to find the usage, instead
// of "invalid value" followed by the whole usage text.
func parseExplained(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	err := fs.Parse(args)
	fs.SetOutput(out)
	if m := explainedValue.FindStringSubmatch(buf.String()); err != nil && m != nil {
		fmt.Fprintf(out, "nichealthctl %s: %s (nichealthctl %s --help for usage)\n", fs.Name(), m[1], fs.Name())
		return err
	}
	_, _ = buf.WriteTo(out)
	return err
}

func usageError(stderr io.Writer, fs *flag.FlagSet, format string, a ...any) int {
	fmt.Fprintf(stderr, "nichealthctl %s: %s\n", fs.Name(), fmt.Sprintf(format, a...))
	fs.Usage()
	return exitUsage
}

// connect dials the bus; on failure it prints why and returns the exit code.
func connect(cf *clientFlags, name string, stderr io.Writer) (*dbusapi.Client, int, bool) {
	c, err := dbusapi.Dial(cf.busAddress)
	if err != nil {
		return nil, fail(stderr, name, err), false
	}
	return c, 0, true
}

func callCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), callTimeout)
}

// fail prints err as one actionable line and maps it to an exit code.
func fail(stderr io.Writer, name string, err error) int {
	msg := err.Error()
	code := exitFailed
	switch {
	case errors.Is(err, dbusapi.ErrDaemonNotRunning), errors.Is(err, dbusapi.ErrBusUnreachable):
		code = exitUnreachable
	case errors.Is(err, dbusapi.ErrAccessDenied):
		if !strings.Contains(msg, "join group") {
			msg += ": use sudo or join group " + dbusapi.DefaultGroup
		}
	}
	fmt.Fprintf(stderr, "nichealthctl %s: %s\n", name, msg)
	return code
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// palette colours output only for a terminal, and never under NO_COLOR
// (https://no-color.org: any non-empty value).
type palette struct{ on bool }

func paletteFor(w io.Writer) palette {
	if os.Getenv("NO_COLOR") != "" {
		return palette{}
	}
	f, ok := w.(*os.File)
	if !ok {
		return palette{}
	}
	if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err != nil {
		return palette{}
	}
	return palette{on: true}
}

func (p palette) wrap(code, s string) string {
	if !p.on {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (p palette) red(s string) string    { return p.wrap("1;31", s) }
func (p palette) yellow(s string) string { return p.wrap("33", s) }
func (p palette) green(s string) string  { return p.wrap("32", s) }
func (p palette) bold(s string) string   { return p.wrap("1", s) }

// The one vocabulary of every human-facing view (README, "Words"): a
// port, a condition, an event or the node is healthy, degraded or fatal,
// the health model's own words (checks/health.Severity); only the Nagios
// plugin keeps Nagios's OK, WARNING and CRITICAL.
const (
	wordHealthy  = "healthy"
	wordDegraded = "degraded"
	wordFatal    = "fatal"
)

// severityWord names a verdict, a condition or an event.
func severityWord(fatal, healthy bool) string {
	switch {
	case fatal:
		return wordFatal
	case !healthy:
		return wordDegraded
	}
	return wordHealthy
}

// health is the one-word verdict for a port.
func health(pv dbusapi.PortView) string { return severityWord(pv.Fatal, pv.Healthy) }

func (p palette) health(word string) string {
	switch word {
	case wordFatal:
		return p.red(word)
	case wordDegraded:
		return p.yellow(word)
	}
	return p.green(word)
}

// age renders how long ago a realtime µs timestamp was.
func age(usec uint64, now time.Time) string {
	if usec == 0 {
		return "never"
	}
	d := now.Sub(time.UnixMicro(int64(usec)))
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms ago", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs ago", d.Seconds())
	}
	return d.Truncate(time.Second).String() + " ago"
}

func stamp(usec uint64) string {
	if usec == 0 {
		return "-"
	}
	return time.UnixMicro(int64(usec)).Local().Format("2006-01-02 15:04:05 MST")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
