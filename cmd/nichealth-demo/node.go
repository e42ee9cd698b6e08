package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology/sim"
)

// daemonConfig is what differs between the story and the try-it node.
type daemonConfig struct {
	interval    time.Duration
	jsonl       string // "-" for stdout
	dbus        bool
	metricsAddr string // "" = metrics off
	adminGroup  string // "" = the daemon's default (nichealth-admin)
	// farEnd is the [farEnd] table ("": the far end is not read: a
	// simulated host has no fabric behind it).
	farEnd string
}

// writeConfig writes the daemon's configuration for host h to path.
func writeConfig(path string, h *sim.Host, nodeName string, c daemonConfig) error {
	var b strings.Builder
	fmt.Fprintf(&b, "sysfsRoot = %q\nprocfsRoot = %q\ndevRoot = %q\nmetadataPath = %q\n",
		h.SysRoot(), h.ProcRoot(), h.DevRoot(), h.MetadataPath())
	fmt.Fprintf(&b, "nodeName = %q\npollingInterval = %q\n", nodeName, c.interval.String())
	if c.metricsAddr != "" {
		fmt.Fprintf(&b, "metricsAddress = %q\n", c.metricsAddr)
	}
	fmt.Fprintf(&b, "[sinks.jsonl]\npath = %q\n[dbus]\nenabled = %v\n", c.jsonl, c.dbus)
	if c.adminGroup != "" {
		fmt.Fprintf(&b, "adminGroup = %q\n", c.adminGroup)
	}
	if c.farEnd == "" {
		c.farEnd = "[farEnd]\nenabled = false\n"
	}
	b.WriteString(c.farEnd)
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// daemonCommand is nichealthd run against the files of dir.
func daemonCommand(bin, dir, busAddr string) (*exec.Cmd, error) {
	exe, err := filepath.Abs(filepath.Join(bin, "nichealthd"))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(exe); err != nil {
		return nil, fmt.Errorf("no nichealthd in %s (run `make build` first, or pass --bin DIR): %w", bin, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "state"), 0o755); err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "--config", filepath.Join(dir, "config.toml"), "--state-file", filepath.Join(dir, "state", "state.json"))
	cmd.Env = withEnv(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS", busAddr)
	return cmd, nil
}

// withEnv returns env with key set to value (removed when value is empty).
func withEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, e := range env {
		if !strings.HasPrefix(e, key+"=") {
			out = append(out, e)
		}
	}
	if value != "" {
		out = append(out, key+"="+value)
	}
	return out
}

// arrival is one event of the daemon's JSON-lines stream.
type arrival struct {
	ev  event.Event
	raw string // the line as written, for lines that are not events
}

// readEvents turns the JSON-lines stream r into arrivals; the channel is
// closed at the end of the stream.
func readEvents(r io.Reader) <-chan arrival {
	ch := make(chan arrival, 1024)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var a arrival
			if err := json.Unmarshal(sc.Bytes(), &a.ev); err != nil {
				a.raw = sc.Text()
			}
			ch <- a
		}
	}()
	return ch
}
