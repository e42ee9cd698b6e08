package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/dbusapi/localbus"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/iblab"
	"github.com/nichealth/nichealthd/topology/sim"
)

// storyOptions are the demo's flags.
type storyOptions struct {
	bin, shape string
	interval   time.Duration
	verbose    bool
	colour     bool
}

// story is one run of the demo.
type story struct {
	opts    storyOptions
	w       io.Writer
	dir     string
	h       *sim.Host
	busAddr string
	client  *dbusapi.Client
	events  <-chan arrival
	start   time.Time

	// lab is the InfiniBand fabric lab behind mlx5_0 (nil without ibsim,
	// opensm and infiniband-diags): the far end of its cable.
	lab *iblab.Lab

	detected, expected int // events
	faults, ignored    int
	faultsDetected     int
	recoveries         int
	latencies          []time.Duration // of fault events
}

func (s *story) printf(format string, a ...any) {
	fmt.Fprintf(s.w, format, a...)
}

func (s *story) say(format string, a ...any) {
	s.printf("%s %s\n", s.bold(fmt.Sprintf("[%5.1fs]", time.Since(s.start).Seconds())), fmt.Sprintf(format, a...))
}

func (s *story) paint(code, text string) string {
	if !s.opts.colour {
		return text
	}
	return "\x1b[" + code + "m" + text + "\x1b[0m"
}

func (s *story) bold(text string) string { return s.paint("1", text) }

// verdict is the event's severity in the words every view uses (healthy,
// degraded, fatal: docs/operating.md, "Words").
func (s *story) verdict(ev event.Event) string {
	switch {
	case ev.IsHealthy:
		return s.paint("32", "healthy  ")
	case ev.IsFatal:
		return s.paint("31", "fatal    ")
	}
	return s.paint("33", "degraded ")
}

func entityOf(ev event.Event) string {
	switch {
	case ev.Device() == "":
		return "(node)"
	case ev.Port() == "":
		return ev.Device()
	}
	return ev.Device() + "/" + ev.Port()
}

// runStory plays the demo; it fails when the daemon cannot be started or
// when a fault goes undetected.
func runStory(w io.Writer, o storyOptions) error {
	dir, err := os.MkdirTemp("", "nichealth-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	s := &story{opts: o, w: w, dir: dir, start: time.Now()}
	s.printf("nichealthd on a simulated %s node: faults are injected one at a time, each paired with the event that reports it.\n", o.shape)
	if s.h, err = sim.Build(filepath.Join(dir, "host"), o.shape); err != nil {
		return err
	}
	nics := 0
	for _, d := range s.h.Devices() {
		if !d.IsVF {
			nics++
		}
	}
	s.say("simulated host built: %d NICs, %d GPUs (in %s)", nics, len(s.h.GPUs()), s.h.Root)

	busNote := "no D-Bus"
	if bus, err := localbus.Start(dir); err != nil {
		s.printf("         (no private D-Bus: %v; the nichealthctl views are skipped)\n", err)
	} else {
		defer bus.Stop()
		s.busAddr = bus.Address
		busNote = "D-Bus on a private system bus"
	}
	cfg := daemonConfig{interval: o.interval, jsonl: "-", dbus: s.busAddr != "", adminGroup: ownGroup()}
	if lab, farEnd, why := s.startLab(dir); lab != nil {
		defer lab.Close()
		s.lab, cfg.farEnd = lab, farEnd
		s.say("fabric lab: ibsim and opensm simulate two leaf switches; mlx5_0 port 1 is gpu-a017's HCA on ibsw-leaf1 port 17")
	} else {
		s.printf("         (%s: the far end of a cable is not shown)\n", why)
	}
	if err := writeConfig(filepath.Join(dir, "config.toml"), s.h, "demo-node", cfg); err != nil {
		return err
	}
	notifications, err := listenNotify(filepath.Join(dir, "notify.sock"))
	if err != nil {
		return err
	}
	cmd, err := daemonCommand(o.bin, dir, s.busAddr)
	if err != nil {
		return err
	}
	cmd.Env = append(cmd.Env, "NOTIFY_SOCKET="+filepath.Join(dir, "notify.sock"))
	if s.lab != nil {
		// nichealth-mad speaks MADs as gpu-a017 (umad2sim writes its view
		// of sysfs into the working directory).
		cmd.Env, cmd.Dir = append(cmd.Env, s.lab.Vars(iblab.GPUA017)...), s.lab.Dir
	}
	logf, err := os.Create(filepath.Join(dir, "nichealthd.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start nichealthd: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	s.events = readEvents(out)
	s.say("nichealthd started: polling every %v, %s, events as JSON lines", o.interval, busNote)

	status, err := waitReady(notifications, exited, filepath.Join(dir, "nichealthd.log"))
	if err != nil {
		return err
	}
	if s.busAddr != "" {
		if s.client, err = dbusapi.Dial(s.busAddr); err != nil {
			return fmt.Errorf("connect to the private bus: %w", err)
		}
		defer s.client.Close()
	}
	if err := s.baselines(status); err != nil {
		return err
	}
	for _, st := range s.steps() {
		if err := s.play(st); err != nil {
			return err
		}
	}
	s.summary()
	if s.detected < s.expected {
		return fmt.Errorf("%d of %d expected events were not reported; the daemon log is in the output above", s.expected-s.detected, s.expected)
	}
	return nil
}

// startLab starts the fabric lab behind mlx5_0 (fabric.go) for the
// story, reading the far end every second so the fault shows at once.
func (s *story) startLab(dir string) (*iblab.Lab, string, string) {
	return startFabric(s.h, s.opts.bin, dir, "", "[farEnd]\ninterval = \"1s\"\ntimeout = \"800ms\"\n")
}

// ownGroup is the caller's primary group when not root, so that the
// demo's ack (root or the admin group only) works for whoever runs it.
func ownGroup() string {
	if os.Getuid() == 0 {
		return ""
	}
	if g, err := user.LookupGroupId(strconv.Itoa(os.Getgid())); err == nil {
		return g.Name
	}
	return ""
}

// listenNotify is the demo's stand-in for systemd's notification socket:
// READY=1 comes after the daemon's first complete poll.
func listenNotify(path string) (<-chan string, error) {
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	ch := make(chan string, 64)
	go func() {
		defer conn.Close()
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			select {
			case ch <- string(buf[:n]):
			default: // later STATUS= updates nobody reads
			}
		}
	}()
	return ch, nil
}

// waitReady returns the STATUS= sent with READY=1.
func waitReady(notifications <-chan string, exited <-chan struct{}, logPath string) (string, error) {
	timeout := time.After(60 * time.Second)
	for {
		select {
		case msg := <-notifications:
			if !strings.Contains(msg, "READY=1") {
				continue
			}
			for _, l := range strings.Split(msg, "\n") {
				if v, ok := strings.CutPrefix(l, "STATUS="); ok {
					return v, nil
				}
			}
			return "", nil
		case <-exited:
			log, _ := os.ReadFile(logPath)
			return "", fmt.Errorf("nichealthd exited before its first poll:\n%s", log)
		case <-timeout:
			return "", fmt.Errorf("nichealthd sent no READY=1 within 60s (log: %s)", logPath)
		}
	}
}

// baselines summarises the first poll: one line per check instead of one
// per event (--verbose prints them all).
func (s *story) baselines(status string) error {
	s.say("first complete poll (READY=1): %s", status)
	want := 0
	if s.client != nil {
		// The daemon claims its bus name in parallel with the first poll
		// and then fills its event ring from the outbox, so once it answers,
		// ListEvents holds every event of the first poll (nothing has been
		// injected yet, so nothing later). The JSON-lines sink may still be
		// writing them: count them in.
		recs, err := s.firstEvents()
		if err != nil {
			return err
		}
		want = len(recs)
	}
	type tally struct {
		// healthy are the ports with a port baseline, ports those whose
		// counters were baselined: a state check has both, its ports and
		// their fatal counters (DESIGN.md difference 2).
		healthy  map[string]bool
		ports    map[string]bool
		counters int
	}
	byCheck := map[string]*tally{}
	cleared, total := 0, 0
	var other []event.Event
	deadline := time.After(10 * time.Second)
	for total < want {
		select {
		case a, ok := <-s.events:
			if !ok {
				return fmt.Errorf("nichealthd closed its event stream")
			}
			if a.raw != "" {
				continue
			}
			total++
			ev := a.ev
			if s.opts.verbose {
				s.show("  ", ev, "")
			}
			t := byCheck[ev.CheckName]
			if t == nil {
				t = &tally{healthy: map[string]bool{}, ports: map[string]bool{}}
				byCheck[ev.CheckName] = t
			}
			switch ev.Kind {
			case event.KindCheckCleared:
				cleared++
			case event.KindPortBaseline:
				t.healthy[entityOf(ev)] = true
			case event.KindCounterBaseline:
				t.counters += len(ev.ErrorCode) // one event names a port's counters
				t.ports[entityOf(ev)] = true
			default:
				other = append(other, ev)
			}
		case <-deadline:
			return fmt.Errorf("only %d of the first poll's %d events arrived on the JSON-lines stream within 10s", total, want)
		}
	}
	if s.client != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ports, err := s.client.Ports(ctx)
		cancel()
		if err == nil {
			s.printf("         %s\n", rolesLine(ports, s.h))
		}
	}
	names := make([]string, 0, len(byCheck))
	for n := range byCheck {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t, ok := byCheck[n]
		if !ok {
			continue
		}
		switch {
		case len(t.healthy) > 0 && t.counters > 0:
			s.printf("         %-27s %d ports healthy at first start; %d fatal counters baselined on %d ports, none breached\n",
				n, len(t.healthy), t.counters, len(t.ports))
		case t.counters > 0:
			s.printf("         %-27s %d counters baselined on %d ports, none breached\n", n, t.counters, len(t.ports))
		case len(t.healthy) > 0:
			s.printf("         %-27s %d ports healthy at first start\n", n, len(t.healthy))
		}
	}
	for _, ev := range other {
		s.show("         ", ev, "")
	}
	more := ""
	if !s.opts.verbose {
		more = " (--verbose prints each one)"
	}
	s.printf("         %d events in all; no state file yet, so %d checks started clean%s\n", total, cleared, more)
	return nil
}

func (s *story) firstEvents() ([]dbusapi.EventRecord, error) {
	// The daemon takes its bus name before it copies the outbox into its
	// event ring, so an answer may come while the ring is still empty or
	// being filled: the same non-zero count twice in a row is the whole
	// first poll (the simulated host does not change meanwhile).
	var err error
	prev := -1
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var recs []dbusapi.EventRecord
		recs, err = s.client.ListEvents(ctx, 0)
		cancel()
		if err != nil || len(recs) == 0 {
			continue
		}
		if len(recs) == prev {
			return recs, nil
		}
		prev = len(recs)
	}
	return nil, fmt.Errorf("nichealthd did not list its first poll's events on the private bus within 30s: %v", err)
}

// rolesLine says which ports are watched and which NICs are not.
func rolesLine(ports []dbusapi.PortView, h *sim.Host) string {
	roles := map[string]int{}
	watched := map[string]bool{}
	for _, p := range ports {
		roles[p.Role]++
		watched[p.Device] = true
	}
	names := make([]string, 0, len(roles))
	for r := range roles {
		names = append(names, r)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, r := range names {
		parts = append(parts, fmt.Sprintf("%d %s", roles[r], r))
	}
	var skipped []string
	for _, d := range h.Devices() {
		if !d.IsVF && !watched[d.Name] {
			skipped = append(skipped, d.Name)
		}
	}
	line := fmt.Sprintf("roles: %s ports watched", strings.Join(parts, ", "))
	if len(skipped) > 0 {
		line += fmt.Sprintf("; %s not (management NIC: carries the default route)", strings.Join(skipped, ", "))
	}
	return line
}

func (s *story) show(indent string, ev event.Event, prefix string) {
	s.printf("%s%s%s %-27s %-9s %s\n", indent, prefix, s.verdict(ev), ev.CheckName, entityOf(ev), ev.Message)
	// What a scheduler drains for it: the GPUs behind the NIC (PIX/PXB in
	// the GPU/NIC matrix), a rail rather than the whole node.
	if g := ev.Metadata["gpus"]; g != "" && !ev.IsHealthy && g != "no GPU affinity" {
		s.printf("%s         %s drain %s: behind %s\n", indent, s.paint("36", "→"), g, ev.Device())
	}
}

// ctl runs nichealthctl as an operator would, against the private bus.
func (s *story) ctl(args ...string) {
	if s.busAddr == "" {
		return
	}
	s.printf("$ nichealthctl %s\n", strings.Join(args, " "))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, filepath.Join(s.opts.bin, "nichealthctl"), args...)
	c.Env = withEnv(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS", s.busAddr)
	c.Env = withEnv(c.Env, "NO_COLOR", map[bool]string{false: "1"}[s.opts.colour])
	out, _ := c.CombinedOutput()
	s.printf("%s", out)
}

func (s *story) summary() {
	if s.busAddr != "" {
		s.say("after the faults, the operator's view:")
		s.ctl("ports")
		s.cables()
		s.say("recovery: an admin acknowledges the remediated link_downed breach on mlx5_3 port 1 (no hardware counter is cleared)")
		s.recoveries++
		at := time.Now()
		s.ctl("ack", "mlx5_3", "1", "link_downed")
		_, _ = s.await(at, stepRecovery, []expectation{
			{check: event.InfiniBandStateCheck, device: "mlx5_3", port: "1", verdict: "healthy", mentions: "link_downed"},
		})
	}
	lat := append([]time.Duration(nil), s.latencies...)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p50, worst := time.Duration(0), time.Duration(0)
	if len(lat) > 0 {
		p50, worst = lat[(len(lat)-1)/2], lat[len(lat)-1]
	}
	s.printf("\n%s %d faults injected, %d detected (%d events); %d recoveries reported; %d change on the management NIC correctly not alarmed on.\n",
		s.bold("Summary:"), s.faults, s.faultsDetected, len(s.latencies), s.recoveries, s.ignored)
	s.printf("Detection latency p50 %d ms, max %d ms (polling every %v; a rate threshold and a vanished NIC take more than one poll).\n",
		p50.Milliseconds(), worst.Milliseconds(), s.opts.interval)
	s.printf(`
Next: make try        leaves such a node running (its own D-Bus with the project's policy, metrics on
                      127.0.0.1:2112) and prints three export lines; after them the commands of
                      docs/operating.md work as written: nichealthctl status, ports, port mlx5_3 1,
                      events --follow, ack, check; busctl tree org.nichealth.NicHealth1; curl .../metrics.
      make try-stop   ends it.
`)
}
