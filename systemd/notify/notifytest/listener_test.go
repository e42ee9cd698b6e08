package notifytest

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/internal/component"
)

const wait = 10 * time.Second

func send(t *testing.T, path, msg string) {
	t.Helper()
	c, err := net.Dial("unixgram", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
}

func TestListener_ReceivesWithCredentials(t *testing.T) {
	l, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	send(t, l.Path, "READY=1\nSTATUS=all healthy\n")
	m, err := l.Next(wait)
	if err != nil {
		t.Fatal(err)
	}
	if m.PID != int32(os.Getpid()) || m.UID != uint32(os.Getuid()) {
		t.Errorf("credentials pid=%d uid=%d, want %d/%d", m.PID, m.UID, os.Getpid(), os.Getuid())
	}
	if !m.Has("READY", "1") || !m.Has("STATUS", "all healthy") || len(m.Lines) != 2 {
		t.Errorf("parsed %q as %q", m.Raw, m.Lines)
	}
	if _, ok := m.Get("WATCHDOG"); ok {
		t.Error("Get found a key that is not there")
	}
}

// A child process (this test binary re-executed): the listener must
// attribute the datagram to the child, which the daemon's tests rely on.
func TestListener_ChildProcess(t *testing.T) {
	if path := os.Getenv("NOTIFYTEST_CHILD_SEND"); path != "" {
		send(t, path, "READY=1")
		return
	}
	l, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestListener_ChildProcess$")
	cmd.Env = append(os.Environ(), "NOTIFYTEST_CHILD_SEND="+l.Path)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	m, err := l.Next(wait)
	if err != nil {
		t.Fatal(err)
	}
	if m.PID != int32(cmd.Process.Pid) || m.Raw != "READY=1" {
		t.Errorf("got %q from pid %d, want READY=1 from the child %d", m.Raw, m.PID, cmd.Process.Pid)
	}
}

// systemd's own client speaks to the listener as to systemd.
func TestListener_SystemdNotifyClient(t *testing.T) {
	bin, err := exec.LookPath("systemd-notify")
	if err != nil {
		component.Missing(t, "systemd-notify not installed; the unit test above covers the socket")
	}
	l, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cmd := exec.Command(bin, "--ready", "--status=child says hello")
	cmd.Env = append(os.Environ(), l.Env())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("systemd-notify: %v: %s", err, out)
	}
	m, err := l.WaitFor(wait, func(m Message) bool { return m.Has("READY", "1") })
	if err != nil {
		t.Fatal(err)
	}
	// Run as root, systemd-notify sends with its parent's credentials
	// (this process); otherwise with its own. Either is a real pid.
	if m.PID <= 0 {
		t.Errorf("pid %d: want the sender's pid", m.PID)
	}
	if !m.Has("STATUS", "child says hello") {
		t.Errorf("got %q", m.Raw)
	}
}

func TestListener_WaitForSkipsAndTimesOut(t *testing.T) {
	l, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	send(t, l.Path, "STATUS=a")
	send(t, l.Path, "WATCHDOG=1")
	send(t, l.Path, "STOPPING=1")
	m, err := l.WaitFor(wait, func(m Message) bool { return m.Has("STOPPING", "1") })
	if err != nil || m.Raw != "STOPPING=1" {
		t.Fatalf("WaitFor = %q, %v", m.Raw, err)
	}
	if got := l.Count("WATCHDOG", "1"); got != 1 {
		t.Errorf("Count(WATCHDOG) = %d, want 1 (skipped messages stay in Received)", got)
	}
	if _, err := l.Next(time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Errorf("Next on an empty queue = %v, want ErrTimeout", err)
	}
}

func TestListener_CloseDrainsThenErrClosed(t *testing.T) {
	l, err := Listen()
	if err != nil {
		t.Fatal(err)
	}
	send(t, l.Path, "READY=1")
	if _, err := l.WaitFor(wait, func(Message) bool { return true }); err != nil {
		t.Fatal(err)
	}
	send(t, l.Path, "STOPPING=1")
	// Wait until it is received, then close: it must still be readable.
	for deadline := time.Now().Add(wait); len(l.Received()) < 2; {
		if time.Now().After(deadline) {
			t.Fatal("second message never arrived")
		}
		time.Sleep(time.Millisecond)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if m, err := l.Next(wait); err != nil || m.Raw != "STOPPING=1" {
		t.Fatalf("after Close: %q, %v; want the queued STOPPING=1", m.Raw, err)
	}
	if _, err := l.Next(wait); !errors.Is(err, ErrClosed) {
		t.Errorf("drained and closed: %v, want ErrClosed", err)
	}
	if _, err := os.Stat(l.Path); !os.IsNotExist(err) {
		t.Errorf("socket %s still exists after Close", l.Path)
	}
}
