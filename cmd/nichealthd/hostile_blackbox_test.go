package main

// Black-box tests of hostile hosts: a full state disk, a bounded outbox
// behind a dead connector, damaged sequence numbers. The promise (DESIGN.md
// section 3): these delay events, never drop them, and the poll loop never
// stops.

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nichealth/nichealthd/daemon/sink/connector"
	"github.com/nichealth/nichealthd/daemon/sink/connector/pb"
	"github.com/nichealth/nichealthd/event"
)

// mountTmpfs mounts a fresh tmpfs of size on dir. Without root (or mount)
// the test is skipped, except under CI=true, where a missing real
// component must fail rather than pass silently.
func mountTmpfs(t *testing.T, dir, size string) {
	t.Helper()
	miss := func(format string, a ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format, a...)
		}
		t.Skipf(format, a...)
	}
	if os.Geteuid() != 0 {
		miss("mounting a tmpfs needs root")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0755", "tmpfs", dir).CombinedOutput(); err != nil {
		miss("mount tmpfs on %s: %v %s", dir, err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
}

// fillDisk writes path until the filesystem refuses with ENOSPC.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", path, err)
			}
			break
		}
	}
	// Small writes too, so that not even a page is left.
	for {
		if _, err := f.Write(buf[:512]); err != nil {
			break
		}
	}
}

// nonEventLines counts the daemon's log lines that are not the one line
// per durable event.
func nonEventLines(log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if l == "" || strings.Contains(l, "msg=event ") {
			continue
		}
		out = append(out, l)
	}
	return out
}

// TestHostile_FullStateDiskDelaysWithoutHotLoop: the state directory is a
// tmpfs that fills up while ports flap for 10 s. The daemon keeps polling,
// writes a bounded number of log lines (not one per poll or per retry), and
// once space returns every durable event reaches the JSON-lines file
// exactly once.
func TestHostile_FullStateDiskDelaysWithoutHotLoop(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "")
	stateDir := filepath.Dir(n.state)
	mountTmpfs(t, stateDir, "4m")
	n.writeIntegConfig(integConfig{})
	n.start()
	n.waitReadyLog()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	fill := filepath.Join(stateDir, "fill")
	fillDisk(t, fill)
	logBefore := len(nonEventLines(n.stderr.String()))

	flapped := []string{"mlx5_1", "mlx5_2", "mlx5_4"}
	end := time.Now().Add(10 * time.Second)
	for i := 0; time.Now().Before(end); i++ {
		for _, dev := range flapped {
			st, phys := "DOWN", "Disabled"
			if i%2 == 1 {
				st, phys = "ACTIVE", "LinkUp"
			}
			if err := n.h.SetPortState(dev, 1, st, phys); err != nil {
				t.Fatal(err)
			}
		}
		// Paces the stimulus (two polls per flap), not an assertion.
		time.Sleep(200 * time.Millisecond)
	}
	for _, dev := range flapped {
		if err := n.h.SetPortState(dev, 1, "ACTIVE", "LinkUp"); err != nil {
			t.Fatal(err)
		}
	}
	during := nonEventLines(n.stderr.String())[logBefore:]
	if len(during) > 36 {
		t.Fatalf("%d log lines while the disk was full, want at most a few dozen:\n%s", len(during), strings.Join(during, "\n"))
	}
	t.Logf("%d log lines while the disk was full:\n%s", len(during), strings.Join(during, "\n"))
	if !strings.Contains(strings.Join(during, "\n"), "no space left on device") {
		t.Fatal("the daemon never met the full disk: the test did not test anything")
	}
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	// Space is back: every port's last word is its recovery.
	n.waitLastWord(flapped, func(e event.Event) bool { return e.IsHealthy })
	n.stop()

	evs := n.read()
	seen := map[string]int{}
	for _, e := range evs {
		seen[e.ID]++
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("event %s written %d times", id, c)
		}
	}
	durable := strings.Count(n.stderr.String(), "msg=event ")
	if len(evs) != durable {
		t.Errorf("%d events in the JSON-lines file, %d made durable (logged): %s", len(evs), durable, summary(evs))
	}

}

// lastStateEvent is dev's newest port-state event in evs.
func lastStateEvent(evs []event.Event, dev string) (event.Event, bool) {
	var last event.Event
	found := false
	for _, e := range evs {
		if e.Device() == dev && (e.CheckName == event.InfiniBandStateCheck || e.CheckName == event.EthernetStateCheck) {
			last, found = e, true
		}
	}
	return last, found
}

// waitLastWord waits until the newest port-state event of every dev in the
// JSON-lines file satisfies f.
func (n *node) waitLastWord(devs []string, f func(e event.Event) bool) {
	n.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		evs := n.read()
		ok := true
		for _, dev := range devs {
			if e, found := lastStateEvent(evs, dev); !found || !f(e) {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("the last word on %v never arrived; events: %s\nstderr:\n%s", devs, summary(evs), n.stderr.Tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var seqRe = regexp.MustCompile(`msg=event seq=(\d+)`)

// loggedSeqs are the sequence numbers of the events the daemon made
// durable since its last start.
func loggedSeqs(t *testing.T, log string) []uint64 {
	t.Helper()
	var out []uint64
	for _, m := range seqRe.FindAllStringSubmatch(log, -1) {
		v, err := strconv.ParseUint(m[1], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// TestHostile_DamagedCursorPast2To62: the JSON-lines sink's cursor file is
// damaged to a number past 2^62. The daemon warns once, re-sends the
// retained events once, keeps handing out small, fresh sequence numbers,
// and the next starts re-send nothing.
func TestHostile_DamagedCursorPast2To62(t *testing.T) {
	t.Parallel()
	n := newNode(t, "minimal", "")
	// Three rounds flap the port three times: the flap rule would add an
	// event of its own to the count this test makes.
	n.writeIntegConfig(integConfig{tables: "[rules.flap]\nenabled = false\n"})
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	n.stop()
	seen := map[uint64]bool{}
	for _, s := range loggedSeqs(t, n.stderr.String()) {
		seen[s] = true
	}
	first := len(n.read())
	cursor := filepath.Join(filepath.Dir(n.state), "outbox", "cursor.jsonl")
	if err := os.WriteFile(cursor, []byte("4611686018427387904\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	for round := 1; round <= 3; round++ {
		before := len(n.read())
		n.start()
		n.waitReadyLog()
		if err := n.h.SetPortState("mlx5_0", 1, "DOWN", "Disabled"); err != nil {
			t.Fatal(err)
		}
		n.waitEventAfter(before, "fatal", portEvent("mlx5_0", event.KindPortFatal))
		if err := n.h.SetPortState("mlx5_0", 1, "ACTIVE", "LinkUp"); err != nil {
			t.Fatal(err)
		}
		n.waitEventAfter(before, "recovery", portEvent("mlx5_0", event.KindPortRecovered))
		n.stop()
		log := n.stderr.String()
		warned := strings.Count(log, "cursor.jsonl is damaged")
		if want := map[bool]int{true: 1, false: 0}[round == 1]; warned != want {
			t.Fatalf("round %d: %d warnings about the damaged cursor, want %d\n%s", round, warned, want, log)
		}
		seqs := loggedSeqs(t, log)
		if len(seqs) != 2 {
			t.Fatalf("round %d: %d events made durable, want 2\n%s", round, len(seqs), log)
		}
		for _, s := range seqs {
			if s >= 1<<62 || seen[s] {
				t.Fatalf("round %d: sequence number %d handed out (seen before: %v)", round, s, seen[s])
			}
			seen[s] = true
		}
		got := len(n.read()) - before
		resent := 0
		if round == 1 {
			resent = first
		}
		if got != 2+resent {
			t.Fatalf("round %d: %d lines written, want the 2 new events plus %d re-sent: %s", round, got, resent, summary(n.read()[before:]))
		}
	}
}

// TestHostile_120FlapsThrough64KiBBound: with the connector down and the
// outbox bound at its minimum (64 KiB), 120 INIT<->ACTIVE flaps overflow
// it. The bound folds superseded events instead of dropping the news, so
// when the connector comes back its last word on every port is the
// JSON-lines file's last word, non-fatal ones included.
func TestHostile_120FlapsThrough64KiBBound(t *testing.T) {
	t.Parallel()
	sock := connectorSocket(t)
	n := newNode(t, "dgx-h100", "")
	n.writeIntegConfig(integConfig{connector: sock, batch: "100ms", tables: "[outbox]\nmaxBytes = 65536\n"})
	n.start()
	n.waitReadyLog()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	var devs []string
	for _, e := range n.read() {
		if e.Kind == event.KindPortBaseline && e.Port() == "1" && e.CheckName == event.InfiniBandStateCheck && len(devs) < 6 {
			devs = append(devs, e.Device())
		}
	}
	if len(devs) < 6 {
		t.Fatalf("want 6 InfiniBand ports, got %v: %s", devs, summary(n.read()))
	}
	set := func(devs []string, st, phys string, kind event.Kind) {
		t.Helper()
		before := len(n.read())
		for _, dev := range devs {
			if err := n.h.SetPortState(dev, 1, st, phys); err != nil {
				t.Fatal(err)
			}
		}
		for _, dev := range devs {
			n.waitEventAfter(before, string(kind)+" "+dev, portEvent(dev, kind))
		}
	}
	flaps := 0
	for flaps < 120 {
		set(devs, "INIT", "LinkUp", event.KindPortNonFatal)
		set(devs, "ACTIVE", "LinkUp", event.KindPortRecovered)
		flaps += len(devs)
	}
	// The last word differs per port: half end degraded (non-fatal).
	set(devs[:3], "INIT", "LinkUp", event.KindPortNonFatal)
	want := n.read()

	pc := startConnector(t, sock, nil)
	lastWords := func(evs []event.Event) []string {
		ids := make([]string, len(devs))
		for i, dev := range devs {
			e, _ := lastStateEvent(evs, dev)
			ids[i] = e.ID
		}
		return ids
	}
	// The three ports left in INIT beside ACTIVE peers become fatal when
	// the card-anomaly hold (30 s) ends: on a busy machine that can happen
	// while the connector is still draining the outage, and then it is
	// the file's new last word. So the last words are taken again until
	// the connector holds the file's current ones.
	connectorWords := func(acc []*pb.HealthEvent) []string {
		ids := make([]string, len(devs))
		for i, dev := range devs {
			for _, e := range acc {
				if pbDevice(e) == dev && e.GetCheckName() == event.InfiniBandStateCheck {
					ids[i] = e.GetId()
				}
			}
		}
		return ids
	}
	lastIDs := lastWords(want)
	var acc []*pb.HealthEvent
	var got []string
	for range 3 {
		// After a long outage the drainer's backoff (capped at 30 s, with
		// jitter) may be longer than waitDelivered's patience.
		acc = firstSeen(waitDeliveredWithin(pc, n, lastIDs, 90*time.Second))
		got = connectorWords(acc)
		want = n.read()
		now := lastWords(want)
		if slices.Equal(now, lastIDs) && slices.Equal(got, lastIDs) {
			break
		}
		lastIDs = now
	}
	n.stop()
	for i, dev := range devs {
		if got[i] != lastIDs[i] {
			t.Errorf("%s: the connector's last word is %s, the JSON-lines file's %s", dev, got[i], lastIDs[i])
		}
	}
	if len(acc) >= len(want) {
		t.Fatalf("the connector received all %d events: the bound was never reached", len(acc))
	}
	t.Logf("%d events in the JSON-lines file, %d reached the connector after folding", len(want), len(acc))
	for _, dev := range devs[:3] {
		if !slicesContainsKind(acc, dev, "port-nonfatal") {
			t.Errorf("%s: no non-fatal event reached the connector", dev)
		}
	}
}

func slicesContainsKind(evs []*pb.HealthEvent, dev, kind string) bool {
	for _, e := range evs {
		if pbDevice(e) == dev && e.GetMetadata()[connector.KindMetadataKey] == kind {
			return true
		}
	}
	return false
}

// parkedIDs reads the connector's dead-letter file the way an operator
// would look at it: one JSON object per rejected event.
func parkedIDs(t *testing.T, n *node) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(n.state), "outbox", "rejected.platform-connector"))
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var p struct {
			Reason string      `json:"reason"`
			Event  event.Event `json:"event"`
		}
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatalf("dead-letter line %q: %v", line, err)
		}
		out[p.Event.ID] = p.Reason
	}
	return out
}

// TestHostile_ConnectorInvalidArgumentParksNotDrops: the connector answers
// InvalidArgument to everything for a while, while ports flap. No event is
// acknowledged silently: each is delivered after the connector recovers or
// parked with the server's reason, logged with its id; a reload offers the
// parked ones again and then every event has reached the connector.
func TestHostile_ConnectorInvalidArgumentParksNotDrops(t *testing.T) {
	t.Parallel()
	sock := connectorSocket(t)
	pc := startConnector(t, sock, &platformConnector{})
	rejecting := true
	pc.setRefuse(func(int, *pb.HealthEvents) error {
		if rejecting {
			return status.Error(codes.InvalidArgument, "nodeName not registered yet")
		}
		return nil
	})
	n := newNode(t, "dgx-h100", "")
	n.writeIntegConfig(integConfig{connector: sock, batch: "100ms"})
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	togglePorts(n, "mlx5_1", "mlx5_2", "mlx5_3")
	during := n.read()
	// Every event of the rejecting period is parked (none acknowledged).
	deadline := time.Now().Add(60 * time.Second)
	for {
		parked := parkedIDs(t, n)
		missing := 0
		for _, e := range during {
			if _, ok := parked[e.ID]; !ok {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events neither delivered nor parked\n%s", missing, len(during), n.stderr.Tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for id, reason := range parkedIDs(t, n) {
		if !strings.Contains(reason, "nodeName not registered yet") {
			t.Errorf("parked %s without the server's reason: %q", id, reason)
		}
		if !strings.Contains(n.stderr.String(), id) {
			t.Errorf("parked %s without a log line naming it", id)
		}
	}
	pc.mu.Lock()
	rejecting = false
	pc.mu.Unlock()
	// After recovery new events flow at once...
	togglePorts(n, "mlx5_4")
	after := n.read()[len(during):]
	pc.waitDelivered(n, ids(after))
	// ...and a reload offers the parked ones again.
	if err := n.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	pc.waitDelivered(n, ids(n.read()))
	n.waitLog("the retry", func(l string) bool { return strings.Contains(l, "retried rejected events") })
	deadline = time.Now().Add(10 * time.Second)
	for len(parkedIDs(t, n)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("still parked after a successful retry: %v", parkedIDs(t, n))
		}
		time.Sleep(50 * time.Millisecond)
	}
	n.stop()
}

// waitDeliveredWithin is platformConnector.waitDelivered with a deadline.
func waitDeliveredWithin(p *platformConnector, n *node, ids []string, d time.Duration) []*pb.HealthEvent {
	n.t.Helper()
	deadline := time.Now().Add(d)
	for {
		_, acc, _ := p.snapshot()
		got := map[string]bool{}
		for _, e := range acc {
			got[e.GetId()] = true
		}
		missing := 0
		for _, id := range ids {
			if !got[id] {
				missing++
			}
		}
		if missing == 0 {
			return acc
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("connector never received %d of %d events; received %d\nstderr:\n%s", missing, len(ids), len(acc), n.stderr.Tail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// flap takes dev's port 1 down and up and waits for both events in the
// JSON-lines file at path (which may differ from n.events after a reload).
func (n *node) flapInto(path, dev string) (down, up event.Event) {
	n.t.Helper()
	saved := n.events
	n.events = path
	defer func() { n.events = saved }()
	before := len(n.read())
	if err := n.h.SetPortState(dev, 1, "DOWN", "Disabled"); err != nil {
		n.t.Fatal(err)
	}
	down = n.waitEventAfter(before, "fatal "+dev+" in "+path, portEvent(dev, event.KindPortFatal))
	if err := n.h.SetPortState(dev, 1, "ACTIVE", "LinkUp"); err != nil {
		n.t.Fatal(err)
	}
	up = n.waitEventAfter(before, "recovery "+dev+" in "+path, portEvent(dev, event.KindPortRecovered))
	return down, up
}

// TestHostile_JSONLRotatedByMoveAndDelete: logrotate-style rotation (mv,
// later rm) and a SIGHUP: each time the next events go to a new file at
// the configured path, none to the moved or deleted inode.
func TestHostile_JSONLRotatedByMoveAndDelete(t *testing.T) {
	t.Parallel()
	n := newNode(t, "minimal", "")
	n.writeIntegConfig(integConfig{})
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	rotated := n.events + ".1"
	if err := os.Rename(n.events, rotated); err != nil {
		t.Fatal(err)
	}
	before := len(readEvents(t, rotated))
	n.flapInto(n.events, "mlx5_0")
	if got := len(readEvents(t, rotated)); got != before {
		t.Fatalf("%d events went to the rotated file", got-before)
	}
	if err := os.Remove(n.events); err != nil {
		t.Fatal(err)
	}
	n.flapInto(n.events, "mlx5_0")
	if err := n.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	n.waitLog("the reload", func(l string) bool { return strings.Contains(l, "configuration applied") })
	n.flapInto(n.events, "mlx5_0")
	// Two flaps' port events since the delete (the third flap also
	// raises the node's flap rule, which lands here too).
	if got := count(n.read(), func(e event.Event) bool {
		return e.Kind == event.KindPortFatal || e.Kind == event.KindPortRecovered
	}); got != 4 {
		t.Fatalf("%d port events at the path after delete and SIGHUP, want 4: %s", got, summary(n.read()))
	}
	n.stop()
}

func readEvents(t *testing.T, path string) []event.Event {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []event.Event
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		var e event.Event
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, e)
	}
	return out
}

// TestHostile_ReloadJSONLPathProblems: a reload whose JSON-lines path is a
// directory is refused naming file, key and line, and the running sinks
// keep delivering; a path whose directory does not exist yet is accepted,
// its events wait, and they arrive as soon as the directory is created.
func TestHostile_ReloadJSONLPathProblems(t *testing.T) {
	t.Parallel()
	n := newNode(t, "minimal", "")
	n.writeIntegConfig(integConfig{})
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	orig := n.events

	dir := filepath.Join(n.dir, "a-directory")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	n.events = dir
	n.writeIntegConfig(integConfig{})
	n.events = orig
	n.waitLog("the refusal", func(l string) bool {
		return strings.Contains(l, "configuration refused") && strings.Contains(l, "sinks.jsonl.path") &&
			strings.Contains(l, n.cfg+":") && strings.Contains(l, "is a directory")
	})
	n.flapInto(orig, "mlx5_0")

	later := filepath.Join(n.dir, "not-yet", "events.jsonl")
	n.events = later
	n.writeIntegConfig(integConfig{})
	n.events = orig
	n.waitLog("the new path applied", func(l string) bool { return strings.Contains(l, "cannot open its file") })
	if err := n.h.SetPortState("mlx5_0", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	n.waitLog("the fault detected", func(l string) bool { return strings.Count(l, "state DOWN") >= 2 })
	if err := os.Mkdir(filepath.Dir(later), 0o755); err != nil {
		t.Fatal(err)
	}
	n.events = later
	n.waitEvent("the fault in the new file", portEvent("mlx5_0", event.KindPortFatal))
	n.events = orig
	n.stop()
}

// TestHostile_FIFOAndDevZeroConfigRefusedWhilePolling: the configuration
// file is replaced by a FIFO, then by a symlink to /dev/zero. Each reload
// is refused with the file named, polling goes on (a fault is reported),
// and SIGTERM still stops the daemon. At start-up both are one-line errors.
func TestHostile_FIFOAndDevZeroConfigRefusedWhilePolling(t *testing.T) {
	t.Parallel()
	n := newNode(t, "minimal", "")
	n.writeIntegConfig(integConfig{})
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	good, err := os.ReadFile(n.cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, replace := range []func(tmp string) error{
		func(tmp string) error { return syscall.Mkfifo(tmp, 0o644) },
		func(tmp string) error { return os.Symlink("/dev/zero", tmp) },
	} {
		tmp := n.cfg + ".new"
		os.Remove(tmp)
		if err := replace(tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, n.cfg); err != nil {
			t.Fatal(err)
		}
		if err := n.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		n.waitLog("the refusal", func(l string) bool {
			return strings.Count(l, "not a regular file") >= i+1 && strings.Contains(l, n.cfg)
		})
		n.flapInto(n.events, "mlx5_0")
	}
	n.stop()

	// At start-up: one line naming the file, exit 1, no hang.
	for _, target := range []string{"fifo", "/dev/zero"} {
		os.Remove(n.cfg)
		if target == "fifo" {
			if err := syscall.Mkfifo(n.cfg, 0o644); err != nil {
				t.Fatal(err)
			}
		} else if err := os.Symlink(target, n.cfg); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(daemonBin, "--config", n.cfg, "--state-file", n.state, "--node-name", "bb-node")
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "not a regular file") {
			t.Fatalf("start with %s config: %v\n%s", target, err, out)
		}
	}
	os.Remove(n.cfg)
	if err := os.WriteFile(n.cfg, good, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHostile_CounterSymlinkOutsideDeviceNotRead: a counter file replaced
// by a symlink to a file outside the device directory (here one whose
// content would be a fatal link_downed breach) is not read: the check is
// made on the resolved path when the plan is built, not on the text of the
// configured path.
func TestHostile_CounterSymlinkOutsideDeviceNotRead(t *testing.T) {
	t.Parallel()
	n := newNode(t, "minimal", "")
	n.writeIntegConfig(integConfig{})
	p, err := n.h.PortPath("mlx5_0", 1, "counters/link_downed")
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(n.dir, "secret")
	if err := os.WriteFile(secret, []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, p); err != nil {
		t.Fatal(err)
	}
	n.start()
	n.waitReadyLog()
	n.waitLog("the refusal", func(l string) bool {
		return strings.Contains(l, "resolves outside its device directory") && strings.Contains(l, "counter=link_downed") && strings.Contains(l, secret)
	})
	// Were it read, this would latch a fatal breach.
	if err := os.WriteFile(secret, []byte("7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	n.flapInto(n.events, "mlx5_0") // two polls later at least
	n.stop()
	if c := count(n.read(), func(e event.Event) bool {
		return e.Kind == event.KindCounterBreach && e.Metadata["counter"] == "link_downed"
	}); c != 0 {
		t.Fatalf("the file behind the symlink was read: %s", summary(n.read()))
	}
}
