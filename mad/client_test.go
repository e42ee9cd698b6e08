package mad

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/mad/wire"
)

// The test binary doubles as a helper that misbehaves on command
// (NICHEALTH_FAKE_MAD=mode): the supervisor meets a real child process,
// real pipes and real signals.
func TestMain(m *testing.M) {
	if mode := os.Getenv("NICHEALTH_FAKE_MAD"); mode != "" {
		os.Exit(fakeHelper(mode))
	}
	os.Exit(m.Run())
}

func fakeHelper(mode string) int {
	if mode == "nolibs" {
		fmt.Fprintln(os.Stderr, "nichealth-mad: error while loading shared libraries: libibmad.so.5: cannot open shared object file: No such file or directory")
		return 127
	}
	if mode == "hanghello" {
		time.Sleep(time.Hour)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, wire.MaxLine), wire.MaxLine)
	n := 0
	for in.Scan() {
		req, err := wire.DecodeRequest(in.Bytes())
		if err != nil {
			fmt.Println(`{"id":0,"error":{"kind":"request","msg":"bad"}}`)
			continue
		}
		n++
		a := wire.Answer{ID: req.ID}
		switch req.Op {
		case wire.OpHello:
			a.Hello = &wire.Hello{Version: wire.Version, Helper: "fake"}
			if mode == "oldversion" {
				a.Hello.Version = 99
			}
			b, _ := wire.Encode(a)
			os.Stdout.Write(b)
			continue
		case wire.OpPeer:
			a.Peer = &wire.Peer{NodeGUID: "0x0000000000200001", PortGUID: "0x0000000000200001", NodeType: 2, NumPorts: 8, Port: 1, LID: 3, Description: "Switch2", State: 4, PhysState: 5}
		case wire.OpPortCounters:
			a.Counters = &wire.PortCounters{SymbolErrorCounter: uint64(n)}
		default:
			a.Err = &wire.Error{Kind: wire.ErrTimeout, Msg: "no answer"}
		}
		switch mode {
		case "hang":
			fmt.Fprintln(os.Stderr, "ibwarn: [42] about to hang")
			time.Sleep(time.Hour)
		case "crash":
			fmt.Fprintln(os.Stderr, "panic: the library crashed")
			return 3
		case "garbage":
			fmt.Println("ibwarn: [42] mad_rpc: not a protocol line")
			continue
		case "huge":
			fmt.Println(`{"id":1,"error":{"kind":"mad","msg":"` + strings.Repeat("x", 2*wire.MaxLine) + `"}}`)
			continue
		case "wrongid":
			a.ID += 7
		case "unbounded":
			a.Peer.Description = strings.Repeat("d", wire.MaxText+1)
		}
		b, _ := wire.Encode(a)
		os.Stdout.Write(b)
	}
	return 0
}

func fake(t *testing.T, mode string) Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Path: exe, Env: append(os.Environ(), "NICHEALTH_FAKE_MAD="+mode),
		Grace: 200 * time.Millisecond, MinBackoff: 50 * time.Millisecond, MaxBackoff: 400 * time.Millisecond,
	}
}

var local = wire.Local{CA: "mlx5_0", Port: 1}

func TestClient_AnswersAndOperationErrors(t *testing.T) {
	c := New(fake(t, "ok"))
	defer c.Close()
	if st := c.State(); st.Health != NotStarted {
		t.Fatalf("before any request: %v", st.Health)
	}
	p, err := c.Peer(context.Background(), local, time.Second)
	if err != nil || p.Description != "Switch2" || p.LID != 3 {
		t.Fatalf("peer: %+v %v", p, err)
	}
	// The helper counts its requests, hello first: one process served all.
	for want := uint64(3); want <= 4; want++ {
		pc, err := c.PortCounters(context.Background(), local, 3, 1, time.Second)
		if err != nil || pc.SymbolErrorCounter != want {
			t.Fatalf("counters: %+v %v (want the helper's request %d)", pc, err, want)
		}
	}
	// A failed MAD is the fabric's answer, not the helper's failure.
	_, err = c.ClassPortInfo(context.Background(), local, 3, time.Second)
	var we *wire.Error
	if !errors.As(err, &we) || we.Kind != wire.ErrTimeout {
		t.Fatalf("classportinfo: %v", err)
	}
	if st := c.State(); st.Health != Running || st.Starts != 1 {
		t.Fatalf("after answers: %+v", st)
	}
}

// A helper that stops answering is killed at its request's deadline plus
// the grace, the request fails with ErrLost, and until the backoff has
// passed no new helper is started (a hung fabric is not hammered).
func TestClient_HungHelperKilledAndRestartedAfterBackoff(t *testing.T) {
	cfg := fake(t, "hang")
	cfg.MinBackoff, cfg.MaxBackoff = time.Hour, time.Hour
	c := New(cfg)
	defer c.Close()
	_, err := c.Peer(context.Background(), local, 100*time.Millisecond)
	if !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "did not answer by its deadline") {
		t.Fatalf("hung helper: %v", err)
	}
	st := c.State()
	if st.Health != Restarting || st.Starts != 1 || !strings.Contains(st.Reason, "about to hang") || !strings.Contains(st.Reason, "SIGKILL") && !strings.Contains(st.Reason, "killed") {
		t.Fatalf("state after the hang: %+v", st)
	}
	_, err = c.Peer(context.Background(), local, 100*time.Millisecond)
	if !errors.Is(err, ErrNotRunning) {
		t.Fatalf("within the backoff: %v", err)
	}
}

// Each kind of lost helper says what happened, and the next start waits
// the backoff; once the helper answers again its state is running.
func TestClient_LostHelperReasons(t *testing.T) {
	for mode, want := range map[string]string{
		"crash":     "the library crashed",
		"garbage":   "broke the protocol",
		"huge":      "over the protocol's",
		"wrongid":   "answered request",
		"unbounded": "exceeds",
	} {
		t.Run(mode, func(t *testing.T) {
			c := New(fake(t, mode))
			defer c.Close()
			_, err := c.Peer(context.Background(), local, time.Second)
			if !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), want) {
				t.Fatalf("err %v, want ErrLost naming %q", err, want)
			}
			if st := c.State(); st.Health != Restarting || !strings.Contains(st.Reason, want) {
				t.Fatalf("state %+v", st)
			}
		})
	}
}

func TestClient_RestartsWithGrowingBackoffThenRecovers(t *testing.T) {
	exe, _ := os.Executable()
	cfg := fake(t, "crash")
	c := New(cfg)
	defer c.Close()
	starts := 0
	var waits []time.Duration
	for starts < 3 {
		_, err := c.Peer(context.Background(), local, time.Second)
		switch {
		case errors.Is(err, ErrLost):
			starts++
			waits = append(waits, c.lastWait)
		case errors.Is(err, ErrNotRunning):
			time.Sleep(10 * time.Millisecond)
		default:
			t.Fatalf("crashing helper: %v", err)
		}
	}
	if st := c.State(); st.Starts != 3 {
		t.Errorf("%d helpers started, want 3", st.Starts)
	}
	// The waits double from 50 ms, each jittered within [base/2, 3·base/2):
	// the third (base 200 ms) is past anything the first (50 ms) can be.
	if waits[0] >= 75*time.Millisecond || waits[2] < 100*time.Millisecond {
		t.Errorf("backoff did not grow: %v", waits)
	}
	// The helper is fixed: the next start after the backoff answers.
	c.cfg.Env = append(os.Environ(), "NICHEALTH_FAKE_MAD=ok")
	c.cfg.Path = exe
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := c.Peer(context.Background(), local, time.Second)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrNotRunning) || time.Now().After(deadline) {
			t.Fatalf("after the fix: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := c.State(); st.Health != Running || st.Reason != "" {
		t.Fatalf("recovered state: %+v", st)
	}
}

// Without the libraries the dynamic loader refuses to run the helper:
// that is a host the far end cannot be read on, said with the fix.
func TestClient_LibrariesMissingIsUnavailableWithTheFix(t *testing.T) {
	c := New(fake(t, "nolibs"))
	defer c.Close()
	_, err := c.Hello(context.Background(), time.Second)
	if !errors.Is(err, ErrNotRunning) {
		t.Fatalf("err %v", err)
	}
	st := c.State()
	if st.Health != Unavailable || !strings.Contains(st.Reason, "apt-get install libibumad3 libibmad5") || !strings.Contains(st.Reason, "libibmad.so.5") {
		t.Fatalf("state %+v", st)
	}
}

func TestClient_NotInstalledIsUnavailable(t *testing.T) {
	c := New(Config{Path: "/nonexistent/nichealth-mad"})
	defer c.Close()
	if _, err := c.Hello(context.Background(), time.Second); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("err %v", err)
	}
	if st := c.State(); st.Health != Unavailable || !strings.Contains(st.Reason, "/nonexistent/nichealth-mad") {
		t.Fatalf("state %+v", st)
	}
}

// A helper that never says hello (stuck loading, or in a library's
// handshake) is killed at the start timeout and backed off.
func TestClient_StartTimeout(t *testing.T) {
	cfg := fake(t, "hanghello")
	cfg.StartTimeout = 200 * time.Millisecond
	c := New(cfg)
	defer c.Close()
	if _, err := c.Peer(context.Background(), local, time.Minute); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("err %v", err)
	}
	if st := c.State(); st.Health != Restarting || !strings.Contains(st.Reason, "did not start") || st.Starts != 0 {
		t.Fatalf("state %+v", st)
	}
}

func TestClient_WrongProtocolVersion(t *testing.T) {
	c := New(fake(t, "oldversion"))
	defer c.Close()
	if _, err := c.Hello(context.Background(), time.Second); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("err %v", err)
	}
	if st := c.State(); !strings.Contains(st.Reason, "protocol version 99") {
		t.Fatalf("state %+v", st)
	}
}

// Cancelling the caller (the daemon stopping) returns at once and is not
// counted against the helper.
func TestClient_CancelledRequestIsNotACrash(t *testing.T) {
	c := New(fake(t, "hang"))
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := c.Peer(ctx, local, time.Minute)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if st := c.State(); st.Health == Restarting {
		t.Fatalf("state %+v", st)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Hello(context.Background(), time.Second); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// A request cancelled while the helper is still starting (its hello not
// yet answered) is the caller's doing: it says so, and the helper is not
// backed off as one that failed to start.
func TestClient_CancelledWhileStartingIsNotAFailure(t *testing.T) {
	c := New(fake(t, "hanghello"))
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := c.Peer(ctx, local, time.Minute)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrNotRunning) {
		t.Fatalf("err %v", err)
	}
	if st := c.State(); st.Health == Restarting || st.Health == Unavailable {
		t.Fatalf("state %+v", st)
	}
}

func TestClient_RefusesUnboundedTimeouts(t *testing.T) {
	c := New(fake(t, "ok"))
	defer c.Close()
	for _, d := range []time.Duration{0, -time.Second, time.Hour} {
		if _, err := c.Hello(context.Background(), d); err == nil {
			t.Errorf("timeout %v accepted", d)
		}
	}
}

// BenchmarkRoundTrip is one request through the supervised helper and
// back (a pipe each way, JSON both ways, the answer validated), against
// a helper that answers at once: the client's own cost per MAD request.
func BenchmarkRoundTrip(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	c := New(Config{Path: exe, Env: append(os.Environ(), "NICHEALTH_FAKE_MAD=ok")})
	defer c.Close()
	ctx := context.Background()
	if _, err := c.PortCounters(ctx, local, 3, 1, time.Second); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.PortCounters(ctx, local, 3, 1, time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
