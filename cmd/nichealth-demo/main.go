package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	bin := flag.String("bin", "bin", "directory holding nichealthd and nichealthctl")
	shape := flag.String("shape", "dgx-h100", "simulated node shape (the scripted faults and the try-it history name dgx-h100's NICs)")
	interval := flag.Duration("interval", 250*time.Millisecond, "the daemon's poll interval")
	verbose := flag.Bool("verbose", false, "print every event of the first poll, not one line per check")
	keep := flag.Bool("keep", false, "leave a simulated node, its private D-Bus and nichealthd running in --dir and print the exports to use them (make try)")
	stop := flag.Bool("stop", false, "stop what --keep left running in --dir and remove it (make try-stop)")
	dir := flag.String("dir", "/tmp/nichealth-try", "with --keep and --stop: where the node, bus, daemon and pid file live")
	policy := flag.String("policy", "packaging/dbus/org.nichealth.NicHealth1.conf", "with --keep: the project's D-Bus policy file the private bus loads")
	metrics := flag.String("metrics-address", "", "with --keep: where the daemon serves /metrics (\"\": 127.0.0.1:2112, or a free loopback port when that one is taken)")
	fleet := flag.Bool("fleet", false, "beside the try-it node in --dir, run Prometheus with --rules scraping it and print its URL, alerts and the fabric map command (make try-fleet)")
	rules := flag.String("rules", "packaging/prometheus/nichealth.rules.yml", "with --fleet: the alerting rules Prometheus loads")
	flag.Parse()
	var err error
	switch {
	case *stop:
		err = stopTry(os.Stdout, *dir)
	case *fleet:
		err = startFleet(os.Stdout, fleetOptions{dir: *dir, bin: *bin, rules: *rules})
	case *keep:
		err = startTry(os.Stdout, tryOptions{bin: *bin, shape: *shape, dir: *dir, policy: *policy, metricsAddr: *metrics, interval: *interval})
	default:
		err = runStory(os.Stdout, storyOptions{bin: *bin, shape: *shape, interval: *interval, verbose: *verbose, colour: isTerminal(os.Stdout)})
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "nichealth-demo: %v\n", err)
		os.Exit(1)
	}
}

// isTerminal: colours only on a terminal, and never under NO_COLOR.
func isTerminal(f *os.File) bool {
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
