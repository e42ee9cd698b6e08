package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sim"
)

func TestSummarizeNearestRank(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // reversed: summarize must sort
	}
	cases := []struct {
		name               string
		in                 []time.Duration
		p50, p90, p99, max time.Duration
	}{
		{"empty", nil, 0, 0, 0, 0},
		{"one", ms(7), 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond, 7 * time.Millisecond},
		{"1..100", ms(hundred...), 50 * time.Millisecond, 90 * time.Millisecond, 99 * time.Millisecond, 100 * time.Millisecond},
		{"two", ms(1, 9), 1 * time.Millisecond, 9 * time.Millisecond, 9 * time.Millisecond, 9 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := summarize(c.in)
			if s.p50 != c.p50 || s.p90 != c.p90 || s.p99 != c.p99 || s.max != c.max || s.n != len(c.in) {
				t.Errorf("summarize = %+v, want p50 %v p90 %v p99 %v max %v", s, c.p50, c.p90, c.p99, c.max)
			}
		})
	}
}

func TestPlanFaultsAlternates(t *testing.T) {
	ts := []target{{"mlx5_0", 1}, {"mlx5_1", 1}, {"mlx5_2", 1}}
	got := planFaults(ts, 7)
	want := []fault{
		{ts[0], true}, {ts[1], true}, {ts[2], true},
		{ts[0], false}, {ts[1], false}, {ts[2], false},
		{ts[0], true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d faults, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("fault %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if planFaults(nil, 5) != nil {
		t.Error("no targets must give no faults")
	}
}

// The faulted ports must be ones the daemon monitors and reports on:
// compute PFs only, never a VF or the management NIC.
func TestFaultTargetsAreMonitoredComputePorts(t *testing.T) {
	h, err := sim.Build(t.TempDir(), "dgx-h100")
	if err != nil {
		t.Fatal(err)
	}
	got := faultTargets(h.Devices())
	if len(got) != 8 {
		t.Fatalf("dgx-h100 has 8 compute ports, got %d targets: %v", len(got), got)
	}
	for _, tg := range got {
		d, ok := h.Device(tg.dev)
		if !ok || d.IsVF || d.ExpectedRole != topology.RoleCompute {
			t.Errorf("target %v is not a compute PF (%+v)", tg, d)
		}
	}
}

func TestFaultMatches(t *testing.T) {
	f := fault{target{"mlx5_3", 1}, true}
	mk := func(kind event.Kind, dev string, port int) *event.Event {
		ev := event.New(event.Spec{Kind: kind, CheckName: event.InfiniBandStateCheck, Device: dev, Port: port, Message: "m"},
			event.Stamp{NodeName: "n", Now: time.Unix(1, 0)})
		return &ev
	}
	cases := []struct {
		name string
		ev   *event.Event
		want bool
	}{
		{"the fault's event", mk(event.KindPortFatal, "mlx5_3", 1), true},
		{"recovery is not a down fault's answer", mk(event.KindPortRecovered, "mlx5_3", 1), false},
		{"other device", mk(event.KindPortFatal, "mlx5_4", 1), false},
		{"other port", mk(event.KindPortFatal, "mlx5_3", 2), false},
		{"baseline", mk(event.KindPortBaseline, "mlx5_3", 1), false},
	}
	for _, c := range cases {
		if got := f.matches(c.ev); got != c.want {
			t.Errorf("%s: matches = %v, want %v", c.name, got, c.want)
		}
	}
	up := fault{target{"mlx5_3", 1}, false}
	if !up.matches(mk(event.KindPortRecovered, "mlx5_3", 1)) {
		t.Error("an up fault must match port-recovered")
	}
}

// A line is only decoded once its newline has been written: the daemon's
// sink writes whole batches, but a reader can still catch a write half
// way.
func TestLineSplitterKeepsPartialLine(t *testing.T) {
	var sp lineSplitter
	if l := sp.feed([]byte(`{"a":1}` + "\n" + `{"b"`)); len(l) != 1 || string(l[0]) != `{"a":1}` {
		t.Fatalf("first feed = %q", l)
	}
	if l := sp.feed([]byte(`:2}`)); len(l) != 0 {
		t.Fatalf("no newline yet, got %q", l)
	}
	if l := sp.feed([]byte("\n\n")); len(l) != 2 || string(l[0]) != `{"b":2}` || len(l[1]) != 0 {
		t.Fatalf("third feed = %q", l)
	}
}

func TestDecodeLinesCountsGarbage(t *testing.T) {
	ev := event.New(event.Spec{Kind: event.KindPortFatal, CheckName: event.InfiniBandStateCheck, Device: "mlx5_0", Port: 1, Message: "x"},
		event.Stamp{NodeName: "n", Now: time.Unix(5, 0)})
	good, err := json.Marshal(&ev)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(9, 0)
	out, bad := decodeLines([][]byte{good, []byte("{torn"), []byte("  "), []byte("null garbage")}, at, nil)
	if len(out) != 1 || bad != 2 {
		t.Fatalf("decoded %d, bad %d; want 1 and 2", len(out), bad)
	}
	if out[0].ev.Device() != "mlx5_0" || !out[0].at.Equal(at) {
		t.Errorf("decoded %+v", out[0])
	}
}

func TestTailJSONLFollowsAppends(t *testing.T) {
	p := filepath.Join(t.TempDir(), "events.jsonl")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := make(chan arrival, 8)
	done := make(chan error, 1)
	go func() { done <- tailJSONL(ctx, p, out) }()
	for i, dev := range []string{"mlx5_0", "mlx5_1"} {
		ev := event.New(event.Spec{Kind: event.KindPortFatal, CheckName: event.InfiniBandStateCheck, Device: dev, Port: 1, Message: "x"},
			event.Stamp{NodeName: "n", Now: time.Unix(int64(i), 0)})
		b, _ := json.Marshal(&ev)
		// Written in two pieces: the tail must wait for the newline.
		f.Write(b[:5])
		f.Write(append(b[5:], '\n'))
		select {
		case a := <-out:
			if a.ev.Device() != dev {
				t.Fatalf("got %s, want %s", a.ev.Device(), dev)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d never tailed", i)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestParseStatus(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want memStatus
	}{
		{"kernel 6.x", "Name:\tnichealthd\nVmPeak:\t 1266808 kB\nVmHWM:\t   14000 kB\nVmRSS:\t   12345 kB\nRssAnon:\t    5000 kB\nRssFile:\t    7345 kB\nThreads:\t7\n",
			memStatus{12345, 14000, 5000, 7345}},
		{"missing fields", "Name:\tx\nVmRSS:\t1 kB\n", memStatus{1, -1, -1, -1}},
		{"malformed values", "VmRSS:\tlots kB\nVmHWM:\t-5 kB\nRssAnon:\t3 MB\nRssFile:\t4\n", memStatus{-1, -1, -1, -1}},
		{"empty", "", memStatus{-1, -1, -1, -1}},
	}
	for _, c := range cases {
		if got := parseStatus([]byte(c.in)); got != c.want {
			t.Errorf("%s: parseStatus = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestParsePollStats(t *testing.T) {
	page := `# HELP nichealth_poll_duration_seconds Duration of poll cycles.
# TYPE nichealth_poll_duration_seconds histogram
nichealth_poll_duration_seconds_bucket{le="0.001"} 10
nichealth_poll_duration_seconds_bucket{le="+Inf"} 4242
nichealth_poll_duration_seconds_sum 8.484
nichealth_poll_duration_seconds_count 4242
nichealth_ready 1
`
	ps, ok := parsePollStats([]byte(page))
	if !ok || ps.count != 4242 || ps.sum != 8.484 {
		t.Errorf("got %+v %v", ps, ok)
	}
	for _, bad := range []string{"", "nichealth_poll_duration_seconds_count x\n", "nichealth_poll_duration_seconds_count -1\n",
		"nichealth_poll_duration_seconds_sum 3\n", "nichealth_poll_duration_seconds_count 1e300\n"} {
		if _, ok := parsePollStats([]byte(bad)); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func FuzzParseStatus(f *testing.F) {
	f.Add([]byte("VmRSS:\t 12 kB\nVmHWM:\t 13 kB\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ms := parseStatus(b)
		for _, v := range []int64{ms.VmRSS, ms.VmHWM, ms.RssAnon, ms.RssFile} {
			if v < -1 {
				t.Fatalf("field %d below -1 from %q", v, b)
			}
		}
		if ps, ok := parsePollStats(b); ok && (ps.count < 0 || ps.sum < 0) {
			t.Fatalf("negative poll stats %+v from %q", ps, b)
		}
	})
}

// The rendered configuration must be one the daemon accepts.
func TestRenderConfigIsValid(t *testing.T) {
	h, err := sim.Build(t.TempDir(), "minimal")
	if err != nil {
		t.Fatal(err)
	}
	doc := renderConfig(h, 25*time.Millisecond, filepath.Join(h.Root, "e.jsonl"), false, "127.0.0.1:9")
	c, err := config.Parse("rendered", []byte(doc))
	if err != nil {
		t.Fatalf("daemon refuses the rendered config: %v\n%s", err, doc)
	}
	if c.PollInterval != 25*time.Millisecond || c.JournalEnabled || c.DBusEnabled || c.Paths.SysfsRoot != h.SysRoot() || c.MetricsAddress != "127.0.0.1:9" {
		t.Errorf("config = interval %v journal %v dbus %v sysfs %s metrics %q", c.PollInterval, c.JournalEnabled, c.DBusEnabled, c.Paths.SysfsRoot, c.MetricsAddress)
	}
	if _, err := config.Parse("rendered", []byte(renderConfig(h, time.Second, filepath.Join(h.Root, "e.jsonl"), true, ""))); err != nil {
		t.Errorf("metrics off: %v", err)
	}
}

func TestDaemonEnvDropsServiceManagerVariables(t *testing.T) {
	env := daemonEnv([]string{"PATH=/bin", "NOTIFY_SOCKET=/run/x", "WATCHDOG_USEC=1", "DBUS_SYSTEM_BUS_ADDRESS=unix:path=/real"}, "unix:path=/private")
	got := strings.Join(env, " ")
	if got != "PATH=/bin DBUS_SYSTEM_BUS_ADDRESS=unix:path=/private" {
		t.Errorf("env = %s", got)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"--mode", "x"}, {"--interval", "1ms"}, {"--faults", "0"}, {"extra"}, {"--nope"}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != exitUsage {
			t.Errorf("%v: exit %d, want %d (stderr %q)", args, code, exitUsage, errb.String())
		}
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--daemon", filepath.Join(t.TempDir(), "absent")}, &out, &errb)
	if code != exitFailed || !strings.Contains(errb.String(), "make build") {
		t.Errorf("missing daemon: exit %d, stderr %q", code, errb.String())
	}
}

// TestEndToEndFewFaults runs the real daemon on a minimal node with a
// handful of faults. It checks that every fault's event was seen on every
// observer, never how fast: timing is the tool's output, not a test
// verdict.
func TestEndToEndFewFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	bin := filepath.Join(t.TempDir(), "nichealthd")
	if out, err := exec.Command("go", "build", "-o", bin, "../nichealthd").CombinedOutput(); err != nil {
		t.Fatalf("build nichealthd: %v\n%s", err, out)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--daemon", bin, "--shape", "minimal", "--faults", "4", "--interval", "20ms", "--timeout", "20s"}, &out, &errb)
	if code != exitGoalMet && code != exitMissed {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "sysfs write") {
			f := strings.Fields(line)
			if n, missed := f[len(f)-2], f[len(f)-1]; n != "4" || missed != "0" {
				t.Errorf("row %q: want 4 events and none missed", line)
			}
		}
	}
	if !strings.Contains(out.String(), "sysfs write -> JSONL") {
		t.Errorf("no JSONL row in output:\n%s", out.String())
	}
	t.Logf("\n%s", out.String())
}

// TestEndToEndRSS runs the rss mode for a few hundred polls and checks it
// reports through to the requested count.
func TestEndToEndRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	bin := filepath.Join(t.TempDir(), "nichealthd")
	if out, err := exec.Command("go", "build", "-o", bin, "../nichealthd").CombinedOutput(); err != nil {
		t.Fatalf("build nichealthd: %v\n%s", err, out)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--mode", "rss", "--daemon", bin, "--shape", "minimal", "--cycles", "100", "--dbus=false"}, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := strings.Fields(lines[len(lines)-1])
	if len(last) < 3 || !strings.HasSuffix(lines[len(lines)-1], "ms") {
		t.Fatalf("last line %q is not a report row\n%s", lines[len(lines)-1], out.String())
	}
	t.Logf("\n%s", out.String())
}
