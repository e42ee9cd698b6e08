package dbustest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/nichealth/nichealthd/dbusapi/localbus"
	"github.com/nichealth/nichealthd/internal/component"
)

// PermissivePolicy lets everybody own the name and call everything on it.
// Tests use it to prove the daemon's own access check holds when the bus
// policy does not.
const PermissivePolicy = `<busconfig>
  <policy context="default">
    <allow own="org.nichealth.NicHealth1"/>
    <allow send_destination="org.nichealth.NicHealth1"/>
  </policy>
</busconfig>
`

// Options choose the policy files the private bus loads.
type Options struct {
	// PolicyFiles are copied into the bus's policy directory. Empty means
	// the project's own file (PolicyFile()).
	PolicyFiles []string
	// ExtraPolicies are policy documents (whole <busconfig>) added after
	// the files, e.g. PermissivePolicy.
	ExtraPolicies []string
	// NoPolicy starts the bus with the stock default policy only (the
	// project's file not installed).
	NoPolicy bool
}

// Bus is a running private system bus.
type Bus struct {
	// Address is the value for DBUS_SYSTEM_BUS_ADDRESS.
	Address string
	Dir     string
	cmd     *exec.Cmd
}

// PolicyFile is the project's packaging/dbus/org.nichealth.NicHealth1.conf,
// located from this source file so tests anywhere in the module find it.
func PolicyFile() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "packaging", "dbus", "org.nichealth.NicHealth1.conf")
}

// Start runs dbus-daemon with a system-type configuration (policy checks
// only work on a system bus: a session bus refuses other uids) and stops it
// when the test ends. It skips the test when dbus-daemon is not installed.
func Start(tb testing.TB, opts Options) *Bus {
	tb.Helper()
	bin, err := exec.LookPath("dbus-daemon")
	if err != nil {
		component.Missing(tb, "dbus-daemon not installed (apt-get install dbus): no real bus to test against")
	}
	// Not tb.TempDir(): its path carries the test's name, and a unix
	// socket path longer than 107 bytes cannot be bound.
	dir, err := os.MkdirTemp("", "nhbus-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	policyDir := filepath.Join(dir, "system.d")
	if err := os.Mkdir(policyDir, 0o755); err != nil {
		tb.Fatal(err)
	}
	files := opts.PolicyFiles
	if len(files) == 0 && !opts.NoPolicy {
		files = []string{PolicyFile()}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatalf("read policy file: %v", err)
		}
		if err := os.WriteFile(filepath.Join(policyDir, filepath.Base(f)), b, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	for i, p := range opts.ExtraPolicies {
		if err := os.WriteFile(filepath.Join(policyDir, fmt.Sprintf("zz-extra-%d.conf", i)), []byte(p), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	sock := filepath.Join(dir, "system_bus_socket")
	conf := localbus.Config(escapeAddressValue(sock), localbus.HostPolicy, policyDir)
	confPath := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		tb.Fatal(err)
	}
	// The socket directory must be reachable by the unprivileged users the
	// policy tests run busctl as.
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(bin, "--config-file="+confPath, "--nofork", "--nopidfile", "--print-address=1")
	// Kill the bus with the test binary even if the test panics.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start dbus-daemon: %v", err)
	}
	bus := &Bus{Dir: dir, cmd: cmd}
	tb.Cleanup(bus.stop)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("dbus-daemon did not print its address: %v (stderr: %s)", err, stderr.String())
	}
	bus.Address = strings.TrimSpace(line)
	// Directories made by TempDir are 0700 up the chain; open the parents
	// that lead to the socket for other users too.
	for d := filepath.Dir(dir); d != os.TempDir() && d != "/" && strings.HasPrefix(d, os.TempDir()); d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	return bus
}

func (b *Bus) stop() {
	if b.cmd.Process != nil {
		_ = b.cmd.Process.Kill()
		_ = b.cmd.Wait()
	}
}

// Env returns the environment of the current process with
// DBUS_SYSTEM_BUS_ADDRESS pointing at this bus.
func (b *Bus) Env() []string {
	env := []string{}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "DBUS_SYSTEM_BUS_ADDRESS=") {
			env = append(env, e)
		}
	}
	return append(env, "DBUS_SYSTEM_BUS_ADDRESS="+b.Address)
}

// Connect opens a connection to the bus, closed when the test ends.
func (b *Bus) Connect(tb testing.TB) *dbus.Conn {
	tb.Helper()
	conn, err := dbus.Connect(b.Address)
	if err != nil {
		tb.Fatalf("connect to private bus: %v", err)
	}
	tb.Cleanup(func() { _ = conn.Close() })
	return conn
}

// WaitSignal waits for the first signal on ch that match accepts. It
// fails the test after a generous deadline: the deadline only bounds a
// broken test, it asserts nothing about speed.
func WaitSignal(tb testing.TB, ch <-chan *dbus.Signal, match func(*dbus.Signal) bool) *dbus.Signal {
	tb.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case s := <-ch:
			if match(s) {
				return s
			}
		case <-deadline:
			tb.Fatal("timed out waiting for a D-Bus signal")
			return nil
		}
	}
}

// escapeAddressValue escapes a D-Bus address value: bytes outside the
// optionally-escaped set become %xx (a test name such as "x=y" puts '=' into
// the socket path).
func escapeAddressValue(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_/.\\*", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02x", c)
	}
	return b.String()
}

// PID is the dbus-daemon's process id, for tests that freeze the bus
// (SIGSTOP) to prove nothing waits on it.
func (b *Bus) PID() int { return b.cmd.Process.Pid }
