package iblab

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/internal/component"
)

//go:embed testdata/*.topo testdata/*.map
var fabrics embed.FS

// Fabrics shipped with the lab (testdata/README.md says where each is from).
const (
	// TwoLeaves: two HDR leaves; the node under test on leaf 1 port 17.
	TwoLeaves = "two-leaves.topo"
	// TwoLeavesHostile: TwoLeaves whose leaf 1 describes itself with
	// control characters and a bidi override (LeafHostileDescription).
	TwoLeavesHostile = "two-leaves-hostile.topo"
	// X5: a real 100-node QDR cluster's ibnetdiscover output.
	X5 = "psmn-x5-qdr-2020.topo"
)

// Nodes and ports of TwoLeaves, as ibsim names them.
const (
	Leaf1     = "S-b83fd20300a01000"
	Leaf2     = "S-b83fd20300a02000"
	GPUA017   = "H-a088c20300ab0000"
	GPUA018   = "H-a088c20300ac0000"
	SMHost    = "H-a088c20300ad0000"
	Leaf1GUID = "0xb83fd20300a01000"
	// GPUA017Port: leaf 1's port cabled to gpu-a017's mlx5_0.
	GPUA017Port = 17
	// GPUA017PortGUID is gpu-a017 mlx5_0 port 1's GUID (ibsim gives a CA
	// port its node GUID plus the port number).
	GPUA017PortGUID = "0xa088c20300ab0001"
	// LeafHostileDescription is leaf 1's NodeDescription in
	// TwoLeavesHostile: ESC [31m, a C1 CSI and U+202E, raw.
	LeafHostileDescription = "MF0;ibsw-\x1b[31mleaf1\u009b0m\u202e1U/0078MQM"
	// NodeNameMap is TwoLeaves' node-name map.
	NodeNameMap = "two-leaves.map"
)

// Options of a lab.
type Options struct {
	// Fabric is one of the lab's fabrics (TwoLeaves, X5).
	Fabric string
	// SM is the host opensm attaches to.
	SM string
	// Active are hosts whose port must be ACTIVE before Start returns.
	Active []string
	// Timeout bounds Start and each tool run. Default 60 s.
	Timeout time.Duration
	// Keep, a directory, makes a lab that outlives this process (make
	// try's): it runs in Keep, in sessions of its own, its console a FIFO
	// there, so that Attach drives it from another process; Detach hands
	// its processes to the caller. Empty: a lab that dies with this
	// process, in a temporary directory (the tests').
	Keep string
}

// Lab is one running fabric.
type Lab struct {
	// Dir is the lab's working directory: programs run there (umad2sim
	// writes its sysfs view into ./sys-<pid>).
	Dir string
	// Sock is the lab's IBSIM_SOCKNAME.
	Sock    string
	preload string
	timeout time.Duration

	ibsim, sm *exec.Cmd
	console   io.WriteCloser
	out, warn replies
	mu        sync.Mutex // one console command at a time
	mark      int
	closeOnce sync.Once
	// detached: the processes are not this one's to end (Detach, Attach);
	// Close only lets go of the console.
	detached bool
	// afterStart: this process's copies of a kept ibsim's output files.
	afterStart []io.Closer
}

// replies is what ibsim printed: in memory for a lab of this process, in
// its output file for a kept one.
type replies interface {
	Len() int
	From(n int) string
	String() string
}

// MissingError is a tool the lab needs that this machine lacks.
type MissingError struct{ What string }

func (e *MissingError) Error() string { return e.What }

// Require ends tb when a lab could not start: a missing tool through
// component.Missing (skip here, fail under CI), anything else as a failure.
func Require(tb testing.TB, err error) {
	tb.Helper()
	var me *MissingError
	if errors.As(err, &me) {
		component.Missing(tb, "%s", me.What)
		return
	}
	if err != nil {
		tb.Fatalf("fabric lab: %v", err)
	}
}

// Preload finds umad2sim, the preload that sends libibumad's calls to ibsim.
func Preload() (string, error) {
	for _, pat := range []string{"/usr/lib/*/umad2sim/libumad2sim.so", "/usr/lib/umad2sim/libumad2sim.so", "/usr/lib64/umad2sim/libumad2sim.so"} {
		if m, _ := filepath.Glob(pat); len(m) > 0 {
			return m[0], nil
		}
	}
	return "", &MissingError{"umad2sim (libumad2sim.so) not found under /usr/lib: apt-get install ibsim-utils"}
}

// Tools checks that the lab's programs are installed.
func Tools() error {
	for tool, pkg := range map[string]string{"ibsim": "ibsim-utils", "opensm": "opensm", "perfquery": "infiniband-diags", "smpquery": "infiniband-diags", "saquery": "infiniband-diags", "ibstat": "infiniband-diags"} {
		if _, err := exec.LookPath(tool); err != nil {
			return &MissingError{fmt.Sprintf("%s not installed: apt-get install %s", tool, pkg)}
		}
	}
	_, err := Preload()
	return err
}

// FabricFile writes one of the lab's files (fabric or node-name map) into
// dir and returns its path.
func FabricFile(dir, name string) (string, error) {
	b, err := fabrics.ReadFile("testdata/" + name)
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, b, 0o644)
}

// Start runs ibsim on the fabric and opensm on opt.SM, and waits until
// every host of opt.Active has an ACTIVE port. Close ends it.
func Start(opt Options) (_ *Lab, err error) {
	if err := Tools(); err != nil {
		return nil, err
	}
	preload, _ := Preload()
	if opt.Timeout <= 0 {
		opt.Timeout = 60 * time.Second
	}
	dir, err := labDir(opt.Keep)
	if err != nil {
		return nil, err
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	l := &Lab{Dir: dir, Sock: "nichealth-lab-" + hex.EncodeToString(rnd[:]), preload: preload, timeout: opt.Timeout}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	net, err := FabricFile(dir, opt.Fabric)
	if err != nil {
		return nil, fmt.Errorf("fabric %q: %w", opt.Fabric, err)
	}
	l.ibsim = exec.Command("ibsim", "-s", net)
	l.ibsim.Dir = dir
	l.ibsim.Env = append(os.Environ(), "IBSIM_SOCKNAME="+l.Sock)
	// Replies come on stdout; ibsim's warnings (a trap it dropped, a
	// client it could not reach) on stderr, at any time: kept apart so a
	// command's reply is never mixed with them.
	if opt.Keep != "" {
		if err := l.keepConsole(); err != nil {
			return nil, err
		}
	} else {
		mem, warn := &output{}, &output{}
		l.out, l.warn = mem, warn
		l.ibsim.Stdout, l.ibsim.Stderr = mem, warn
		// The console must stay open: at EOF ibsim spins on its stdin.
		if l.console, err = l.ibsim.StdinPipe(); err != nil {
			return nil, err
		}
		l.ibsim.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	}
	err = l.ibsim.Start()
	for _, c := range l.afterStart {
		c.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("start ibsim: %w", err)
	}
	if _, err := l.Console("# started"); err != nil {
		return nil, fmt.Errorf("ibsim did not come up: %w\n%s", err, l.Output())
	}
	l.sm = exec.Command("opensm", "-f", filepath.Join(dir, "opensm.log"), "-s", "1")
	l.sm.Dir = dir
	l.sm.Env = append(l.Env(opt.SM), "OSM_CACHE_DIR="+dir, "OSM_TMP_DIR="+dir)
	smOut, err := os.Create(filepath.Join(dir, "opensm.out"))
	if err != nil {
		return nil, err
	}
	defer smOut.Close()
	l.sm.Stdout, l.sm.Stderr = smOut, smOut
	l.sm.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if opt.Keep != "" {
		l.sm.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if err := l.sm.Start(); err != nil {
		return nil, fmt.Errorf("start opensm: %w", err)
	}
	for _, h := range opt.Active {
		if err := l.WaitActive(h, time.Now().Add(opt.Timeout)); err != nil {
			return nil, err
		}
	}
	if opt.Keep != "" {
		if err := l.writeEnv(); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Env is the environment of a program that speaks MADs as host.
func (l *Lab) Env(host string) []string {
	env := make([]string, 0, len(os.Environ())+3)
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "LD_PRELOAD=") && !strings.HasPrefix(e, "SIM_HOST=") && !strings.HasPrefix(e, "IBSIM_SOCKNAME=") {
			env = append(env, e)
		}
	}
	return append(env, "LD_PRELOAD="+l.preload, "SIM_HOST="+host, "IBSIM_SOCKNAME="+l.Sock)
}

// Vars are the three variables that make a program speak MADs as host
// (to add to an environment that has none of them).
func (l *Lab) Vars(host string) []string {
	return []string{"LD_PRELOAD=" + l.preload, "SIM_HOST=" + host, "IBSIM_SOCKNAME=" + l.Sock}
}

// Run runs a program as host, in the lab's directory, bounded by the
// lab's timeout; it returns its standard output.
func (l *Lab) Run(host, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = l.Dir, l.Env(host)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return out.String(), fmt.Errorf("%s %s as %s: %v: %s", name, strings.Join(args, " "), host, err, strings.TrimSpace(errb.String()))
		}
		return out.String(), nil
	case <-time.After(l.timeout):
		_ = cmd.Process.Kill()
		<-done
		return out.String(), fmt.Errorf("%s %s as %s: no result within %v", name, strings.Join(args, " "), host, l.timeout)
	}
}

var stateActive = regexp.MustCompile(`(?m)^\s*State: Active$`)

// WaitActive waits until host's port is ACTIVE (the subnet manager has
// swept it), as ibstat run as that host sees it.
func (l *Lab) WaitActive(host string, deadline time.Time) error {
	var last string
	for {
		out, err := l.Run(host, "ibstat")
		if err == nil && stateActive.MatchString(out) {
			return nil
		}
		last = out
		if err != nil {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s's port not ACTIVE by the deadline; ibstat: %s\nopensm: %s", host, last, l.smOutput())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (l *Lab) smOutput() string {
	b, _ := os.ReadFile(filepath.Join(l.Dir, "opensm.out"))
	return string(b)
}

// Console sends one command to ibsim's console and returns what it printed
// in reply. A comment line marks the end of the reply (ibsim echoes
// comments), so replies are never mixed up.
func (l *Lab) Console(cmd string) (string, error) {
	if strings.ContainsAny(cmd, "\n") || len(cmd) > 120 {
		return "", fmt.Errorf("console command %q: one line of at most 120 bytes (ibsim reads 127)", cmd)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mark++
	// The pid tells apart markers of processes sharing a kept lab.
	marker := fmt.Sprintf("# nichealth-lab-mark-%d-%d", os.Getpid(), l.mark)
	from := l.out.Len()
	if _, err := io.WriteString(l.console, cmd+"\n"+marker+"\n"); err != nil {
		return "", fmt.Errorf("console %q: %w", cmd, err)
	}
	deadline := time.Now().Add(l.timeout)
	for {
		s := l.out.From(from)
		if i := strings.Index(s, marker); i >= 0 {
			reply := strings.ReplaceAll(s[:i], "sim> ", "")
			return strings.TrimSpace(reply), nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("console %q: no reply within %v; ibsim printed %q", cmd, l.timeout, s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// PerformanceSet sets a PMA counter of a node's port
// (attr.field = "PortCounters.SymbolErrorCounter").
func (l *Lab) PerformanceSet(node string, port int, attrField string, value uint64) error {
	out, err := l.Console(fmt.Sprintf("PerformanceSet %q[%d] %s=%d", node, port, attrField, value))
	if err == nil && !strings.Contains(out, "has been set to") {
		err = fmt.Errorf("PerformanceSet %s[%d] %s=%d: ibsim said %q", node, port, attrField, value, out)
	}
	return err
}

// Unlink pulls the cable at a node's port; ReLink plugs it back.
func (l *Lab) Unlink(node string, port int) error {
	_, err := l.Console(fmt.Sprintf("Unlink %q[%d]", node, port))
	return err
}

// ReLink restores a link Unlink removed.
func (l *Lab) ReLink(node string, port int) error {
	_, err := l.Console(fmt.Sprintf("ReLink %q[%d]", node, port))
	return err
}

// Link cables two ports (a recabling: Unlink first).
func (l *Lab) Link(a string, ap int, b string, bp int) error {
	out, err := l.Console(fmt.Sprintf("Link %q[%d] %q[%d]", a, ap, b, bp))
	if err == nil && out != "" {
		err = fmt.Errorf("Link %s[%d] %s[%d]: ibsim said %q", a, ap, b, bp, out)
	}
	return err
}

// Client is a program attached to the fabric.
type Client struct {
	ID, PID int
	Node    string
	SM      bool
}

var attached = regexp.MustCompile(`Client (\d+): pid (\d+) connected at "([^"]*)"[^\n]*?( SM)?\s*$`)

// Attached lists the clients holding one of ibsim's 10 slots.
func (l *Lab) Attached() ([]Client, error) {
	out, err := l.Console("Attached")
	if err != nil {
		return nil, err
	}
	var cs []Client
	for _, line := range strings.Split(out, "\n") {
		if m := attached.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			id, _ := strconv.Atoi(m[1])
			pid, _ := strconv.Atoi(m[2])
			cs = append(cs, Client{ID: id, PID: pid, Node: m[3], SM: m[4] != ""})
		}
	}
	return cs, nil
}

// Free releases the slot of a killed program (ibsim frees a slot only when
// its client says goodbye; the kernel would close a dead process's umad
// file, ibsim cannot tell).
func (l *Lab) Free(pid int) error {
	cs, err := l.Attached()
	if err != nil {
		return err
	}
	for _, c := range cs {
		if c.PID == pid {
			_, err := l.Console(fmt.Sprintf("X %d", c.ID))
			return err
		}
	}
	return nil
}

// Stop freezes the whole fabric (SIGSTOP to ibsim): every MAD hangs.
func (l *Lab) Stop() error { return l.signalIbsim(syscall.SIGSTOP) }

// Cont thaws it.
func (l *Lab) Cont() error { return l.signalIbsim(syscall.SIGCONT) }

func (l *Lab) signalIbsim(sig syscall.Signal) error {
	if l.detached || l.ibsim == nil || l.ibsim.Process == nil {
		return errors.New("ibsim is not this process's child: signal it by its pid")
	}
	return l.ibsim.Process.Signal(sig)
}

// Output is everything ibsim printed (its console, then its warnings),
// for failure messages.
func (l *Lab) Output() string { return l.out.String() + "\n" + l.warn.String() }

// Close ends opensm, then ibsim, and removes the lab's directory.
func (l *Lab) Close() {
	l.closeOnce.Do(func() {
		if l.detached {
			if l.console != nil {
				l.console.Close()
			}
			return
		}
		for _, c := range []*exec.Cmd{l.sm, l.ibsim} {
			if c == nil || c.Process == nil {
				continue
			}
			_ = c.Process.Signal(syscall.SIGCONT)
			_ = c.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = c.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(3 * time.Second):
				// opensm can wait for a simulator that is gone.
				_ = c.Process.Kill()
				<-done
			}
		}
		if l.console != nil {
			l.console.Close()
		}
		os.RemoveAll(l.Dir)
	})
}

// output collects ibsim's console output, bounded.
type output struct {
	mu  sync.Mutex
	b   []byte
	off int // bytes dropped from the front
}

const outputMax = 4 << 20

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.b = append(o.b, p...)
	if over := len(o.b) - outputMax; over > 0 {
		o.b = append(o.b[:0], o.b[over:]...)
		o.off += over
	}
	return len(p), nil
}

// Len is how many bytes were written in all.
func (o *output) Len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.off + len(o.b)
}

// From is what was written from offset n on.
func (o *output) From(n int) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if n < o.off {
		n = o.off
	}
	return string(o.b[n-o.off:])
}

func (o *output) String() string { return o.From(0) }
