// Command nichealthd watches every InfiniBand and RoCE NIC of a GPU node
// through sysfs and reports health boundary crossings to the journal, an
// NVSentinel platform connector and D-Bus.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/daemon"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/flagdoc"
	"github.com/nichealth/nichealthd/internal/version"
	"github.com/nichealth/nichealthd/systemd/journal"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	fs := flag.NewFlagSet("nichealthd", flag.ContinueOnError)
	configPath := fs.String("config", config.DefaultPath, "TOML configuration file")
	stateFile := fs.String("state-file", "/var/lib/nichealthd/state.json", "persistent state file; the outbox lives beside it")
	bootIDPath := fs.String("boot-id-path", "", "kernel boot ID file (default <procfsRoot>/sys/kernel/random/boot_id)")
	metadata := fs.String("metadata-path", "", "GPU metadata file written by NVSentinel's collector (overrides metadataPath)")
	interval := fs.Duration("state-polling-interval", 0, "poll interval (overrides pollingInterval)")
	socket := fs.String("platform-connector-socket", "", "NVSentinel platform connector, e.g. unix:///run/nvsentinel/nvsentinel.sock (overrides [sinks.connector] socket)")
	strategy := fs.String("processing-strategy", "", "EXECUTE_REMEDIATION, STORE_ONLY or STORE_AND_ANALYSE (overrides processingStrategy)")
	nodeName := fs.String("node-name", "", "node name stamped on every event (default: nodeName, $NODE_NAME, hostname)")
	checksFlag := fs.String("checks", "", "comma-separated checks to run (default all)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	showVersion := fs.Bool("version", false, "print the version and exit")
	checkConfig := fs.Bool("check-config", false, "validate the configuration and exit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: nichealthd [--config FILE] [--state-file FILE] [--node-name NAME] [OPTIONS]\n\nOptions:\n")
		flagdoc.PrintOptions(fs.Output(), fs)
	}
	seams := seamFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *showVersion {
		fmt.Println("nichealthd", version.String())
		return 0
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(os.Stderr, "nichealthd: --log-level %q: use debug, info, warn or error\n", *logLevel)
		return 2
	}
	log := slog.New(journal.ChooseLogHandler(os.Stderr, lvl))

	var ov daemon.Overrides
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["metadata-path"] {
		ov.MetadataPath = metadata
	}
	if set["state-polling-interval"] {
		if *interval < 10*time.Millisecond {
			fmt.Fprintln(os.Stderr, "nichealthd: --state-polling-interval must be at least 10ms")
			return 2
		}
		ov.PollInterval = interval
	}
	if set["platform-connector-socket"] {
		ov.ConnectorSocket = socket
	}
	if set["processing-strategy"] {
		s, err := event.ParseProcessingStrategy(*strategy)
		if err != nil {
			fmt.Fprintf(os.Stderr, "nichealthd: --processing-strategy: %v\n", err)
			return 2
		}
		ov.Strategy = &s
	}
	if set["node-name"] {
		ov.NodeName = nodeName
	}
	if set["checks"] {
		// Seed state 12.1: unknown names are logged and skipped, so a
		// fleet-wide flag naming a check this version lacks does not keep
		// the node unmonitored. A list with no known name at all is a
		// typo, not a choice to run nothing.
		known, unknown := splitChecks(*checksFlag)
		if len(unknown) > 0 {
			log.Warn("unknown check names in --checks are skipped", "unknown", unknown,
				"running", known, "known", config.KnownChecks())
		}
		if len(known) == 0 {
			fmt.Fprintf(os.Stderr, "nichealthd: --checks %q names no known check (known: %s)\n", *checksFlag, strings.Join(config.KnownChecks(), ", "))
			return 2
		}
		m, err := config.ParseChecks(known)
		if err != nil {
			fmt.Fprintf(os.Stderr, "nichealthd: --checks: %v\n", err)
			return 2
		}
		ov.Checks = m
	}
	ov.BootIDPath = *bootIDPath

	if *checkConfig {
		if _, err := daemon.LoadConfig(*configPath, ov); err != nil {
			fmt.Fprintf(os.Stderr, "nichealthd: %v\n", err)
			return 1
		}
		fmt.Printf("%s: configuration is valid\n", *configPath)
		return 0
	}

	sm, err := seams()
	if err != nil {
		fmt.Fprintf(os.Stderr, "nichealthd: %v\n", err)
		return 2
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	tuneMemory()
	d, err := daemon.New(daemon.Options{ConfigPath: *configPath, StateFile: *stateFile, Overrides: ov, Log: log, Signals: sigs, Seams: sm,
		Ready: func() { releaseStartup(log) }})
	if err != nil {
		// One line on stderr saying what is wrong and how to fix it
		// (DESIGN.md section 8).
		fmt.Fprintf(os.Stderr, "nichealthd: %v\n", err)
		return 1
	}
	if err := d.Run(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "nichealthd: %v\n", err)
		return 1
	}
	return 0
}

// splitChecks splits a --checks value into known and unknown check names,
// in the order given; empty items are dropped.
func splitChecks(list string) (known, unknown []string) {
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if slices.Contains(config.KnownChecks(), n) {
			known = append(known, n)
		} else {
			unknown = append(unknown, n)
		}
	}
	return known, unknown
}
