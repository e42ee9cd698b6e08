package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/dbusapi/dbustest"
)

// progressLog collects what wait-ready prints while waiting and lets a
// test block until a given text has been printed.
type progressLog struct {
	mu   sync.Mutex
	buf  strings.Builder
	cond *sync.Cond
}

func newProgressLog() *progressLog {
	l := &progressLog{}
	l.cond = sync.NewCond(&l.mu)
	return l
}

func (l *progressLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	l.cond.Broadcast()
	return len(p), nil
}

func (l *progressLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// await blocks until every text has been printed since mark (a length of
// the log), and returns the new mark. A generous deadline only bounds a
// broken test.
func (l *progressLog) await(t *testing.T, mark int, texts ...string) int {
	t.Helper()
	deadline := time.AfterFunc(20*time.Second, func() {
		l.mu.Lock()
		l.buf.WriteString("\x00timeout")
		l.cond.Broadcast()
		l.mu.Unlock()
	})
	defer deadline.Stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		s := l.buf.String()[mark:]
		if strings.Contains(s, "\x00timeout") {
			t.Fatalf("wait-ready never printed %q; it printed:\n%s", texts, s)
		}
		all := true
		for _, x := range texts {
			all = all && strings.Contains(s, x)
		}
		if all {
			return l.buf.Len()
		}
		l.cond.Wait()
	}
}

// fastWaiter polls every few milliseconds and reports progress on every
// poll, so tests see each state it passes through.
func fastWaiter(addr string, timeout time.Duration, log *progressLog) waiter {
	return waiter{busAddress: addr, timeout: timeout, poll: 10 * time.Millisecond, progress: time.Nanosecond, stderr: log}
}

func TestWaitReady_ReadyAtOnce(t *testing.T) {
	f := newFixture(t)
	out, errs, code := ctl(t, f.bus, nil, "wait-ready", "--timeout", "20s")
	if code != exitOK || out != "" {
		t.Errorf("code %d %q %q", code, out, errs)
	}
	out, _, code = runIn("wait-ready", "--json", "--bus-address", f.bus.Address)
	var o waitOutcome
	if err := json.Unmarshal([]byte(out), &o); err != nil || code != exitOK || !o.Ready || !o.Appeared || len(o.Pending) != 0 {
		t.Errorf("--json: %v code %d %+v", err, code, o)
	}
}

// The gate opens only once the first poll is done, every port is healthy
// and no port runs below its role peers (the daemon's link sanity finding
// on the port, which the fixture publishes as the daemon would).
func TestWaitReady_ReadyAfterChange(t *testing.T) {
	f := newFixture(t)
	f.update(func(m *dbusapi.ManagerView, p *[]dbusapi.PortView) {
		m.Ready = false
		(*p)[1].State, (*p)[1].PhysState, (*p)[1].Healthy, (*p)[1].Fatal = "DOWN", "Disabled", false, true
		(*p)[1].Message = "Port mlx5_1 port 1: state DOWN, phys_state Disabled"
		(*p)[1].Rate = "10 Gb/sec (4X SDR)"
	})
	log := newProgressLog()
	done := make(chan waitOutcome, 1)
	go func() { done <- fastWaiter(f.bus.Address, time.Minute, log).wait(context.Background()) }()

	mark := log.await(t, 0, "waiting for nichealthd to complete its first poll")
	f.update(func(m *dbusapi.ManagerView, _ *[]dbusapi.PortView) { m.Ready = true })
	mark = log.await(t, mark, "waiting for Port mlx5_1 port 1: state DOWN, phys_state Disabled")
	const slower = "Port mlx5_1 port 1 runs at 200 Gb/s, its Compute peers at 400 Gb/s: check the cable and the switch port"
	f.update(func(_ *dbusapi.ManagerView, p *[]dbusapi.PortView) {
		(*p)[1].State, (*p)[1].PhysState, (*p)[1].Healthy, (*p)[1].Fatal = "ACTIVE", "LinkUp", false, false
		(*p)[1].Up, (*p)[1].Verdict = true, "degraded"
		(*p)[1].Message = slower
		(*p)[1].Rate, (*p)[1].RateGbps = "200 Gb/sec (4X HDR)", 200
		(*p)[1].Conditions = []dbusapi.ConditionView{{Check: "InfiniBandDegradationCheck", Entity: "mlx5_1/1 rate", Kind: "link-sanity", Message: slower}}
		(*p)[1].Sanity = []string{slower}
	})
	// Up, but at half its peers' rate: not ready yet.
	log.await(t, mark, "waiting for Port mlx5_1 port 1 runs at 200 Gb/s, its Compute peers at 400 Gb/s")
	select {
	case o := <-done:
		t.Fatalf("ready too early: %+v", o)
	default:
	}
	f.update(func(_ *dbusapi.ManagerView, p *[]dbusapi.PortView) {
		(*p)[1].Rate, (*p)[1].RateGbps = "400 Gb/sec (4X NDR)", 400
		(*p)[1].Healthy, (*p)[1].Verdict, (*p)[1].Message = true, "healthy", ""
		(*p)[1].Conditions, (*p)[1].Sanity = nil, []string{}
	})
	select {
	case o := <-done:
		if !o.Ready || !o.Appeared {
			t.Errorf("outcome %+v", o)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("never ready; progress:\n%s", log.String())
	}
}

func TestWaitReady_TimeoutListsPorts(t *testing.T) {
	f := newFixture(t)
	f.update(func(_ *dbusapi.ManagerView, p *[]dbusapi.PortView) {
		(*p)[0].Healthy, (*p)[0].Fatal = false, true
		(*p)[0].Counters[0].Breached = true
		(*p)[0].Message = "Port mlx5_0 port 1: healthy (ACTIVE, LinkUp)"
		(*p)[2].Role = "Management" // never waited for, even when down
		(*p)[2].State, (*p)[2].Healthy = "DOWN", false
	})
	out, errs, code := ctl(t, f.bus, nil, "wait-ready", "--timeout", "300ms")
	if code != exitFailed || out != "" || !strings.Contains(errs, "not ready after") ||
		!strings.Contains(errs, "  link_downed latched (held until acknowledged: once remediated, nichealthctl ack mlx5_0 1 link_downed)\n") || strings.Contains(errs, "mlx5_bond_0") {
		t.Errorf("code %d %q\n%s", code, out, errs)
	}
	o := fastWaiter(f.bus.Address, 200*time.Millisecond, newProgressLog()).wait(context.Background())
	if o.Ready || !o.Appeared || len(o.Pending) != 1 {
		t.Errorf("outcome %+v", o)
	}
}

func TestWaitReady_DaemonNeverAppears(t *testing.T) {
	bus := dbustest.Start(t, dbustest.Options{})
	out, errs, code := ctl(t, bus, nil, "wait-ready", "--timeout", "300ms")
	if code != exitUnreachable || out != "" || !strings.Contains(errs, "nichealthd did not appear on the system bus within") ||
		!strings.Contains(errs, "systemctl start nichealthd") {
		t.Errorf("code %d %q %q", code, out, errs)
	}
	_, errs, code = runIn("wait-ready", "--timeout", "100ms", "--bus-address", "unix:path=/nonexistent/bus")
	if code != exitUnreachable || !strings.Contains(errs, "system bus unreachable") {
		t.Errorf("no bus: code %d %q", code, errs)
	}
}

// The gate may be started before the daemon (ExecStartPre= ordering is
// not always After=nichealthd.service).
func TestWaitReady_DaemonAppearsLater(t *testing.T) {
	bus := dbustest.Start(t, dbustest.Options{})
	log := newProgressLog()
	done := make(chan waitOutcome, 1)
	go func() { done <- fastWaiter(bus.Address, time.Minute, log).wait(context.Background()) }()
	log.await(t, 0, "waiting for nichealthd to appear on the system bus")
	srv, err := dbusapi.Serve(bus.Connect(t), dbustest.NewBackend(dbustest.SampleManager(), dbustest.SamplePorts()), dbusapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	select {
	case o := <-done:
		if !o.Ready {
			t.Errorf("outcome %+v", o)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("never ready; progress:\n%s", log.String())
	}
}

func TestWaitReady_Usage(t *testing.T) {
	for _, args := range [][]string{{"wait-ready", "extra"}, {"wait-ready", "--timeout", "-1s"}, {"wait-ready", "--timeout", "soon"}} {
		if _, errs, code := runIn(args...); code != exitUsage {
			t.Errorf("%v: code %d %s", args, code, errs)
		}
	}
	if _, _, code := runIn("wait-ready", "--help"); code != exitOK {
		t.Errorf("--help: code %d", code)
	}
}

// "--timeout 5" is the common slip: one line names the flag and the fix,
// not the flag package's "parse error" above the whole usage text.
func TestWaitReady_TimeoutWithoutUnitSaysWhatToWrite(t *testing.T) {
	_, errs, code := runIn("wait-ready", "--timeout", "5")
	if code != exitUsage {
		t.Errorf("code %d, want %d", code, exitUsage)
	}
	want := "nichealthctl wait-ready: --timeout 5: a duration needs a unit, e.g. 5s (nichealthctl wait-ready --help for usage)\n"
	if errs != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", errs, want)
	}
	if _, errs, _ := runIn("wait-ready", "--bogus"); !strings.Contains(errs, "Usage: nichealthctl wait-ready") {
		t.Errorf("an unknown flag still shows the usage:\n%s", errs)
	}
}

// The gate's rule, in the words of its help: a latched fatal counter
// breach holds it (the node should not take work), a latched non-fatal
// one, congestion and a saturated counter do not (they tell of traffic on
// a link that is up), and any other condition on the port holds it. What
// is not waited for is said when the gate opens.
func TestWaitReady_LatchedNonFatalCounterDoesNotHold(t *testing.T) {
	f := newFixture(t)
	const sym = "Port mlx5_0 port 1: symbol_error - 5000 errors (rate=5000.00/sec, threshold 10/sec)"
	const cong = "Port mlx5_1 port 1: port_xmit_wait - 12% of the port rate lost to congestion"
	nonFatal := func(m *dbusapi.ManagerView, p *[]dbusapi.PortView) {
		(*p)[0].Healthy, (*p)[0].Verdict, (*p)[0].Message = false, "degraded", sym
		(*p)[0].Counters[1].Breached = true
		(*p)[0].Conditions = []dbusapi.ConditionView{{Check: "InfiniBandDegradationCheck", Entity: "mlx5_0/1 symbol_error", Kind: "counter-breach", Message: sym}}
		(*p)[1].Healthy, (*p)[1].Verdict, (*p)[1].Message = false, "degraded", cong
		(*p)[1].Conditions = []dbusapi.ConditionView{{Check: "InfiniBandDegradationCheck", Entity: "mlx5_1/1 port_xmit_wait", Kind: "congestion", Message: cong}}
	}
	f.update(nonFatal)
	out, errs, code := ctl(t, f.bus, nil, "wait-ready", "--timeout", "20s")
	if code != exitOK || out != "" || !strings.Contains(errs, "ready; not waited for") || !strings.Contains(errs, "  mlx5_0/1: "+sym+"\n") ||
		!strings.Contains(errs, "  mlx5_1/1: "+cong+"\n") {
		t.Errorf("non-fatal counter conditions: code %d\n%s", code, errs)
	}
	// DESIGN.md section 16: a RoCE class tells of traffic too.
	const lossy = "Port mlx5_bond_0 port 1: roce-lossy - sequence errors and retransmissions with no congestion signal"
	f.update(func(m *dbusapi.ManagerView, p *[]dbusapi.PortView) {
		(*p)[2].Healthy, (*p)[2].Verdict, (*p)[2].Message = false, "degraded", lossy
		(*p)[2].Conditions = []dbusapi.ConditionView{{Check: "EthernetDegradationCheck", Entity: "mlx5_bond_0/1 roce-lossy", Kind: "roce", Message: lossy}}
	})
	if o := fastWaiter(f.bus.Address, 300*time.Millisecond, newProgressLog()).wait(context.Background()); !o.Ready || len(o.NotWaitedFor) != 3 {
		t.Errorf("a roce-lossy port holds the gate: %+v", o)
	}
	f.update(func(m *dbusapi.ManagerView, p *[]dbusapi.PortView) {
		(*p)[2].Healthy, (*p)[2].Verdict, (*p)[2].Message, (*p)[2].Conditions = true, "healthy", "", nil
	})

	cases := []struct {
		name string
		cond dbusapi.ConditionView
		want string
	}{
		{"a latched fatal counter", dbusapi.ConditionView{Check: "InfiniBandStateCheck", Entity: "mlx5_0/1 link_downed", Kind: "counter-breach", Fatal: true,
			Message: "Port mlx5_0 port 1: link_downed - QP disconnect"}, "Port mlx5_0 port 1: link_downed - QP disconnect (held until acknowledged: once remediated, nichealthctl ack mlx5_0 1 link_downed)"},
		{"a rate below its peers", dbusapi.ConditionView{Check: "InfiniBandDegradationCheck", Entity: "mlx5_0/1 rate", Kind: "link-sanity",
			Message: "Port mlx5_0 port 1 runs at 200 Gb/s, its Compute peers at 400 Gb/s"}, "Port mlx5_0 port 1 runs at 200 Gb/s, its Compute peers at 400 Gb/s"},
		{"a port in INIT", dbusapi.ConditionView{Check: "InfiniBandStateCheck", Entity: "mlx5_0/1", Kind: "port-nonfatal",
			Message: "Port mlx5_0 port 1: state INIT, phys_state LinkUp"}, "Port mlx5_0 port 1: state INIT, phys_state LinkUp"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.update(func(m *dbusapi.ManagerView, p *[]dbusapi.PortView) {
				*m, *p = dbustest.SampleManager(), dbustest.SamplePorts()
				nonFatal(m, p)
				(*p)[0].Conditions = append((*p)[0].Conditions, c.cond)
				if c.cond.Fatal {
					(*p)[0].Verdict, (*p)[0].Fatal = "fatal", true
				}
			})
			o := fastWaiter(f.bus.Address, 300*time.Millisecond, newProgressLog()).wait(context.Background())
			if o.Ready || len(o.Pending) != 1 || o.Pending[0] != c.want || len(o.NotWaitedFor) != 2 {
				t.Errorf("outcome %+v\nwant pending %q", o, c.want)
			}
		})
	}
}

// The help says what the gate waits for, latched breaches included, and
// the one-line summary agrees with it.
func TestWaitReady_HelpSaysWhatHoldsTheGate(t *testing.T) {
	out, errs, code := runIn("wait-ready", "--help")
	help := strings.Join(strings.Fields(out+errs), " ")
	for _, want := range []string{
		"until the node can take work",
		"a latched fatal counter breach (link_downed, ...) included",
		"nichealthctl ack DEVICE PORT COUNTER opens the gate",
		"A latched non-fatal counter breach (an error rate above its threshold), congestion and a saturated counter do not hold it",
		"Far-end conditions (InfiniBandFarEndCheck: a breach or a saturated counter of the switch port at the other end of the cable, peer:* and peer-saturated:*, or the far end not being read) do not hold it either",
		"runs below its role peers' rate",
	} {
		if code != exitOK || !strings.Contains(help, want) {
			t.Errorf("wait-ready --help lacks %q (exit %d):\n%s", want, code, out+errs)
		}
	}
	summary := commands()["wait-ready"].summary
	if !strings.Contains(summary, "no condition but non-fatal counter ones") || !strings.Contains(summary, "a latched fatal breach holds it") || !strings.Contains(summary, "far-end conditions never do") {
		t.Errorf("nichealthctl --help's line for wait-ready: %q", summary)
	}
}

// DESIGN.md section 13 ("Judged as the near end is"): far-end conditions
// are non-fatal evidence about the cable and never hold the boot gate: a
// latched breach of the switch port (peer:*), its saturated field
// (peer-saturated:*) and the far end not being read all let the node
// become ready, and are listed as not waited for. The gate decides by the
// condition's check, so a far-end condition of any kind, even one marked
// fatal, does not hold it, while the same kind under a local check does.
func TestWaitReady_Design13_FarEndConditionsNeverHold(t *testing.T) {
	f := newFixture(t)
	const breach = "Direct-attached ibsw-leaf1 port 17: [SymbolErrorCounter == 55]"
	const sat = "Direct-attached ibsw-leaf1 port 17: SymbolErrorCounter stuck at 65535"
	const lost = "The far end of the InfiniBand ports is not read: nichealth-mad hung; it is started again after a backoff"
	farEnd := func(m *dbusapi.ManagerView, p *[]dbusapi.PortView) {
		*m, *p = dbustest.SampleManager(), dbustest.SamplePorts()
		(*p)[0].Healthy, (*p)[0].Verdict, (*p)[0].Message = false, "degraded", breach
		(*p)[0].Conditions = []dbusapi.ConditionView{
			{Check: "InfiniBandFarEndCheck", Entity: "mlx5_0/1 peer:symbol_error", Kind: "peer-breach", Message: breach},
			{Check: "InfiniBandFarEndCheck", Entity: "mlx5_0/1 peer-saturated:SymbolErrorCounter", Kind: "peer-saturated", Message: sat},
		}
		// As the daemon's snapshot says it: the node's conditions are the
		// ports' and the node-level ones.
		m.Verdict, m.Healthy, m.DegradedPorts = "degraded", false, []string{"mlx5_0/1"}
		m.Conditions = append(slices.Clone((*p)[0].Conditions),
			dbusapi.ConditionView{Check: "InfiniBandFarEndCheck", Entity: "node farEnd", Kind: "far-end-lost", Message: lost})
	}
	f.update(farEnd)
	o := fastWaiter(f.bus.Address, 2*time.Second, newProgressLog()).wait(context.Background())
	if !o.Ready || len(o.Pending) != 0 || len(o.NotWaitedFor) != 3 {
		t.Fatalf("far-end conditions held the gate: %+v", o)
	}
	_, errs, code := ctl(t, f.bus, nil, "wait-ready", "--timeout", "20s")
	for _, w := range []string{"ready; not waited for", "  mlx5_0/1: " + breach + "\n", "  mlx5_0/1: " + sat + "\n", "  " + lost + "\n"} {
		if code != exitOK || !strings.Contains(errs, w) {
			t.Errorf("wait-ready (exit %d) lacks %q:\n%s", code, w, errs)
		}
	}

	// Decided by the check, not the kind: a far-end condition marked
	// fatal still does not hold; a port-state condition does.
	f.update(func(m *dbusapi.ManagerView, p *[]dbusapi.PortView) {
		farEnd(m, p)
		(*p)[0].Conditions[0].Fatal = true
		(*p)[1].Conditions = []dbusapi.ConditionView{{Check: "InfiniBandStateCheck", Entity: "mlx5_1/1", Kind: "port-nonfatal",
			Message: "Port mlx5_1 port 1: state INIT, phys_state LinkUp"}}
		(*p)[1].Healthy, (*p)[1].Verdict = false, "degraded"
	})
	o = fastWaiter(f.bus.Address, 300*time.Millisecond, newProgressLog()).wait(context.Background())
	if o.Ready || len(o.Pending) != 1 || o.Pending[0] != "Port mlx5_1 port 1: state INIT, phys_state LinkUp" {
		t.Fatalf("outcome %+v", o)
	}
}
