package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/nichealth/nichealthd/internal/flagdoc"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	exitGoalMet = exitOK
	exitMissed  = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("nichealth-latency", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mode := fs.String("mode", "latency", "latency: fault-to-event latency; rss: daemon memory after --cycles polls")
	daemonBin := fs.String("daemon", "bin/nichealthd", "the nichealthd binary to run")
	shape := fs.String("shape", "dgx-h100", "simulated node shape (see nichealth-sim shapes)")
	faults := fs.Int("faults", 200, "latency: number of port faults to inject")
	interval := fs.Duration("interval", 100*time.Millisecond, "daemon poll interval (default 100ms for latency, 10ms for rss)")
	cycles := fs.Int("cycles", 10000, "rss: poll cycles to run before the last reading")
	dbus := fs.Bool("dbus", true, "run a private dbus-daemon and measure the HealthEvent signal too")
	timeout := fs.Duration("timeout", 0, "latency: give up on one fault's event after this long (default 10 intervals + 2s)")
	seed := fs.Uint64("seed", 1, "latency: seed of the random delay before each fault")
	keep := fs.Bool("keep", false, "keep the temporary directory (host tree, config, daemon log, events)")
	verbose := fs.Bool("v", false, "latency: print one line per fault")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: nichealth-latency [--mode latency|rss] [OPTIONS]\n\nOptions:\n")
		flagdoc.PrintOptions(stderr, fs)
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *mode == "rss" && !set["interval"] {
		*interval = 10 * time.Millisecond
	}
	switch {
	case *mode != "latency" && *mode != "rss":
		fmt.Fprintf(stderr, "nichealth-latency: --mode %q: use latency or rss\n", *mode)
		return exitUsage
	case *interval < 10*time.Millisecond || *interval > time.Hour:
		fmt.Fprintf(stderr, "nichealth-latency: --interval %v: the daemon accepts 10ms..1h\n", *interval)
		return exitUsage
	case *faults < 1 || *cycles < 1:
		fmt.Fprintln(stderr, "nichealth-latency: --faults and --cycles must be at least 1")
		return exitUsage
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "nichealth-latency: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if *timeout == 0 {
		*timeout = 10**interval + 2*time.Second
	}
	useBus := *dbus
	if useBus {
		if _, err := exec.LookPath("dbus-daemon"); err != nil {
			fmt.Fprintln(stderr, "nichealth-latency: dbus-daemon not found; measuring the JSON-lines sink only (install dbus, or pass --dbus=false to silence this)")
			useBus = false
		}
	}

	dir, err := os.MkdirTemp("", "nichealth-latency-")
	if err != nil {
		fmt.Fprintf(stderr, "nichealth-latency: %v\n", err)
		return exitFailed
	}
	if *keep {
		defer fmt.Fprintf(stdout, "kept %s (nichealthd.log, events.jsonl, config.toml, host/)\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	fmt.Fprintf(stdout, "building %s and starting %s (poll interval %v, D-Bus %v)\n", *shape, *daemonBin, *interval, onOff(useBus))
	n, err := startNode(nodeOptions{daemonBin: *daemonBin, shape: *shape, interval: *interval, dbus: useBus, metrics: *mode == "rss", dir: dir})
	defer n.stop()
	if err != nil {
		fmt.Fprintf(stderr, "nichealth-latency: %v\n", err)
		return exitFailed
	}
	if err := n.waitReady(ctx, 60*time.Second); err != nil {
		fmt.Fprintf(stderr, "nichealth-latency: %v\n", err)
		return exitFailed
	}

	if *mode == "rss" {
		fmt.Fprintf(stdout, "nichealthd pid %d polling %s every %v for %d cycles (%v)\n",
			n.daemon.Process.Pid, *shape, *interval, *cycles, time.Duration(*cycles)**interval)
		if err := runRSS(ctx, n, *cycles, stdout); err != nil {
			fmt.Fprintf(stderr, "nichealth-latency: %v\n", err)
			return exitFailed
		}
		return exitOK
	}

	var vw io.Writer
	if *verbose {
		vw = stdout
	}
	start := time.Now()
	res, err := runLatency(ctx, n, latencyOptions{faults: *faults, timeout: *timeout, seed: *seed, verbose: vw})
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "nichealth-latency: %v\n", err)
		return exitFailed
	}
	if res == nil {
		return exitFailed
	}
	fmt.Fprintf(stdout, "\n%s: %d port faults in %v, poll interval %v\n", *shape, *faults, time.Since(start).Round(time.Second), *interval)
	rows := []string{"sysfs write -> JSONL", "sysfs write -> D-Bus", "poll start -> JSONL"}
	sums := []summary{summarize(res.jsonl), summarize(res.bus), summarize(res.pollToJSONL)}
	missed := []int{res.missedJSONL, res.missedBus, res.missedJSONL}
	if !useBus {
		rows, sums, missed = []string{rows[0], rows[2]}, []summary{sums[0], sums[2]}, []int{missed[0], missed[2]}
	}
	fmt.Fprint(stdout, table(rows, sums, missed))
	limit := *interval + 10*time.Millisecond
	if goalMet(res, *interval, useBus) {
		fmt.Fprintf(stdout, "goal met: p99 <= poll interval + 10ms = %s, no fault missed\n", ms(limit))
		return exitGoalMet
	}
	fmt.Fprintf(stdout, "goal MISSED: p99 must be <= poll interval + 10ms = %s with no fault missed\n", ms(limit))
	return exitMissed
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
