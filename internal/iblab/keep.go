package iblab

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Files of a kept lab (Options.Keep), in its directory.
const (
	consoleFIFO = "console"   // ibsim's stdin
	ibsimOut    = "ibsim.out" // its console's replies
	ibsimErr    = "ibsim.err" // its warnings
	envFile     = "lab.env"   // IBSIM_SOCKNAME and LD_PRELOAD, for Attach
)

// labDir is a kept lab's directory (made if need be), or a new temporary
// one.
func labDir(keep string) (string, error) {
	if keep == "" {
		return os.MkdirTemp("", "iblab-")
	}
	dir, err := filepath.Abs(keep)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, nil
}

// keepConsole makes ibsim's console a FIFO in the lab's directory and its
// output files there, in a session of its own. ibsim holds the FIFO open
// for writing too (O_RDWR), so it never reads an end of file when no
// console client is attached (at EOF it would spin on its stdin).
func (l *Lab) keepConsole() error {
	fifo := filepath.Join(l.Dir, consoleFIFO)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		return fmt.Errorf("make ibsim's console %s: %w", fifo, err)
	}
	in, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	out, err := os.Create(filepath.Join(l.Dir, ibsimOut))
	if err != nil {
		in.Close()
		return err
	}
	warn, err := os.Create(filepath.Join(l.Dir, ibsimErr))
	if err != nil {
		in.Close()
		out.Close()
		return err
	}
	// The child gets its own copies at Start; this process keeps in as
	// its console writer and closes the output files after Start.
	l.ibsim.Stdin, l.ibsim.Stdout, l.ibsim.Stderr = in, out, warn
	l.ibsim.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	l.console = in
	l.out, l.warn = fileReplies(out.Name()), fileReplies(warn.Name())
	l.afterStart = []io.Closer{out, warn}
	return nil
}

func (l *Lab) writeEnv() error {
	env := "IBSIM_SOCKNAME=" + l.Sock + "\nLD_PRELOAD=" + l.preload + "\n"
	return os.WriteFile(filepath.Join(l.Dir, envFile), []byte(env), 0o644)
}

// Process is one program of a kept lab.
type Process struct {
	PID  int
	Name string // as /proc/PID/comm says it
}

// Detach lets a kept lab (Options.Keep) outlive this process: it returns
// the lab's processes, subnet manager first, for the caller to end
// (SIGTERM) when the lab is no longer wanted; Close then only lets go of
// the console.
func (l *Lab) Detach() ([]Process, error) {
	if l.out == nil || l.ibsim == nil || l.sm == nil {
		return nil, errors.New("not a started lab")
	}
	if _, ok := l.out.(fileReplies); !ok {
		return nil, errors.New("only a kept lab (Options.Keep) can be detached")
	}
	ps := []Process{{l.sm.Process.Pid, "opensm"}, {l.ibsim.Process.Pid, "ibsim"}}
	_ = l.sm.Process.Release()
	_ = l.ibsim.Process.Release()
	l.detached = true
	return ps, nil
}

// Attach drives the kept lab in dir from this process: its console
// commands (PerformanceSet, Unlink, ReLink, ...), Env and Run. Close lets
// go of it and leaves it running.
func Attach(dir string) (*Lab, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, envFile))
	if err != nil {
		return nil, fmt.Errorf("no fabric lab in %s: %w", dir, err)
	}
	l := &Lab{Dir: dir, timeout: 10 * time.Second, detached: true,
		out: fileReplies(filepath.Join(dir, ibsimOut)), warn: fileReplies(filepath.Join(dir, ibsimErr))}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), "=")
		switch k {
		case "IBSIM_SOCKNAME":
			l.Sock = v
		case "LD_PRELOAD":
			l.preload = v
		}
	}
	if l.Sock == "" || l.preload == "" {
		return nil, fmt.Errorf("%s: not a fabric lab's environment", filepath.Join(dir, envFile))
	}
	// Non-blocking: with no reader (ibsim gone) the open fails with ENXIO
	// instead of waiting for one.
	f, err := os.OpenFile(filepath.Join(dir, consoleFIFO), os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ENXIO) {
			return nil, fmt.Errorf("the fabric lab in %s is not running (ibsim does not read its console)", dir)
		}
		return nil, err
	}
	l.console = f
	return l, nil
}

// fileReplies reads what ibsim wrote into a file, at most outputMax of it
// from any offset.
type fileReplies string

func (f fileReplies) Len() int {
	st, err := os.Stat(string(f))
	if err != nil {
		return 0
	}
	return int(st.Size())
}

func (f fileReplies) From(n int) string {
	fh, err := os.Open(string(f))
	if err != nil {
		return ""
	}
	defer fh.Close()
	b, _ := io.ReadAll(io.LimitReader(io.NewSectionReader(fh, int64(n), outputMax), outputMax))
	return string(b)
}

func (f fileReplies) String() string {
	if n := f.Len() - outputMax; n > 0 {
		return f.From(n)
	}
	return f.From(0)
}
