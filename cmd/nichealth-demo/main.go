// Command nichealth-demo shows nichealthd at work on a simulated DGX H100
// node: it builds the fake host, starts a private D-Bus system bus and the
// daemon, plays a scripted fault timeline, and prints each health event as
// the daemon emits it, with nichealthctl's view before and after.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/dbusapi/localbus"
	"github.com/nichealth/nichealthd/topology/sim"
)

func main() {
	bin := flag.String("bin", "bin", "directory holding nichealthd and nichealthctl")
	shape := flag.String("shape", "dgx-h100", "simulated node shape")
	keep := flag.Bool("keep", false, "keep the temporary host tree and logs")
	flag.Parse()
	if err := run(*bin, *shape, *keep); err != nil {
		fmt.Fprintf(os.Stderr, "nichealth-demo: %v\n", err)
		os.Exit(1)
	}
}

type demo struct {
	bin, dir, busAddr string
	h                 *sim.Host
	start             time.Time
}

func (d *demo) say(format string, a ...any) {
	fmt.Printf("\n\033[1m[%5.1fs] %s\033[0m\n", time.Since(d.start).Seconds(), fmt.Sprintf(format, a...))
}

func run(bin, shape string, keep bool) error {
	dir, err := os.MkdirTemp("", "nichealth-demo-")
	if err != nil {
		return err
	}
	if !keep {
		defer os.RemoveAll(dir)
	}
	d := &demo{bin: bin, dir: dir, start: time.Now()}
	d.h, err = sim.Build(filepath.Join(dir, "host"), shape)
	if err != nil {
		return err
	}
	d.say("built a simulated %s node in %s", shape, d.h.Root)

	stopBus, err := d.startBus()
	if err != nil {
		fmt.Printf("(no private D-Bus: %v; nichealthctl views are skipped)\n", err)
	} else {
		defer stopBus()
	}

	cfg := filepath.Join(dir, "config.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`sysfsRoot = %q
procfsRoot = %q
devRoot = %q
metadataPath = %q
nodeName = "demo-node"
pollingInterval = "250ms"
[sinks.jsonl]
path = "-"
[dbus]
enabled = %v
`, d.h.SysRoot(), d.h.ProcRoot(), d.h.DevRoot(), d.h.MetadataPath(), d.busAddr != "")), 0o644)
	logf, _ := os.Create(filepath.Join(dir, "nichealthd.log"))
	defer logf.Close()

	cmd := exec.Command(filepath.Join(bin, "nichealthd"), "--config", cfg, "--state-file", filepath.Join(dir, "state", "state.json"))
	cmd.Env = append(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS="+d.busAddr)
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	os.MkdirAll(filepath.Join(dir, "state"), 0o755)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start nichealthd: %w (run `make build` first)", err)
	}
	done := make(chan struct{})
	go printEvents(out, d, done)
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		<-done
		if keep {
			fmt.Printf("\nkept %s (daemon log: nichealthd.log)\n", dir)
		}
	}()

	d.say("nichealthd started (poll interval 250ms); first poll emits the healthy baselines")
	time.Sleep(1500 * time.Millisecond)
	d.ctl("status")
	d.ctl("ports")

	steps := []struct {
		what string
		do   func() error
		wait time.Duration
	}{
		{"compute port mlx5_3 port 1 goes DOWN (cable pulled) and its link_downed counter counts it", func() error {
			if err := d.h.SetPortState("mlx5_3", 1, "DOWN", "Disabled"); err != nil {
				return err
			}
			return d.h.AddCounter("mlx5_3", 1, "counters/link_downed", 1)
		}, 1500 * time.Millisecond},
		{"the cable is reseated: mlx5_3 port 1 comes back ACTIVE/LinkUp (the link_downed breach stays latched)", func() error {
			return d.h.SetPortState("mlx5_3", 1, "ACTIVE", "LinkUp")
		}, 1500 * time.Millisecond},
		{"storage RoCE port mlx5_8 is disabled (netdev goes down with it)", func() error {
			if err := d.h.SetPortState("mlx5_8", 1, "DOWN", "Disabled"); err != nil {
				return err
			}
			return d.h.SetOperstate("enp65s0f0np0", "down")
		}, 1500 * time.Millisecond},
		{"a dirty fibre on mlx5_5: 5000 symbol errors in a second (non-fatal, > 10/s)", func() error {
			return d.h.AddCounter("mlx5_5", 1, "counters/symbol_error", 5000)
		}, 2000 * time.Millisecond},
		{"the management NIC mlx5_12 goes DOWN: never alarmed on (it carries the default route)", func() error {
			return d.h.SetPortState("mlx5_12", 1, "DOWN", "Disabled")
		}, 1500 * time.Millisecond},
		{"compute NIC mlx5_6 falls off the PCIe bus (reported after 3 complete enumerations)", func() error {
			return d.h.RemoveDevice("mlx5_6")
		}, 2500 * time.Millisecond},
	}
	for _, s := range steps {
		d.say("%s", s.what)
		if err := s.do(); err != nil {
			return err
		}
		time.Sleep(s.wait)
	}
	d.say("after the faults")
	d.ctl("status")
	d.ctl("ports")
	if d.busAddr != "" {
		d.say("an admin acknowledges the remediated link_downed breach on mlx5_3 port 1 (no hardware counter cleared)")
		d.ctl("ack", "mlx5_3", "1", "link_downed")
		time.Sleep(800 * time.Millisecond)
	}
	return nil
}

func (d *demo) ctl(args ...string) {
	if d.busAddr == "" {
		return
	}
	fmt.Printf("\n$ nichealthctl %s\n", strings.Join(args, " "))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, filepath.Join(d.bin, "nichealthctl"), args...)
	c.Env = append(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS="+d.busAddr)
	c.Stdout, c.Stderr = os.Stdout, os.Stdout
	c.Run()
}

// startBus runs a private bus so the demo needs no host D-Bus
// configuration and changes nothing on the machine.
func (d *demo) startBus() (func(), error) {
	b, err := localbus.Start(d.dir)
	if err != nil {
		return nil, err
	}
	d.busAddr = b.Address
	return b.Stop, nil
}

func printEvents(r interface{ Read([]byte) (int, error) }, d *demo, done chan struct{}) {
	defer close(done)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e event.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Println(sc.Text())
			continue
		}
		sev := "\033[33mNON-FATAL\033[0m"
		switch {
		case e.IsHealthy:
			sev = "\033[32mHEALTHY  \033[0m"
		case e.IsFatal:
			sev = "\033[31mFATAL    \033[0m"
		}
		fmt.Printf("  %s %-27s %-12s %s\n", sev, e.CheckName, e.RecommendedAction, e.Message)
	}
}
