package mad

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nichealth/nichealthd/internal/repeats"
	"github.com/nichealth/nichealthd/mad/wire"
)

// proc is one run of the helper.
type proc struct {
	cmd    *exec.Cmd
	in     *os.File // our end of its stdin
	out    *os.File // our end of its stdout
	rd     *bufio.Reader
	stderr *tail
	waited chan struct{}
	status string
}

func launch(cfg Config) (*proc, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd := exec.Command(cfg.Path)
	cmd.Env, cmd.Dir = cfg.Env, cfg.Dir
	cmd.Stdin, cmd.Stdout = inR, outW
	// A helper wedged in a library call cannot notice its stdin closing:
	// the kernel ends it with the daemon.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	errR, err := cmd.StderrPipe()
	if err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW} {
			f.Close()
		}
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW} {
			f.Close()
		}
		return nil, err
	}
	inR.Close()
	outW.Close()
	p := &proc{cmd: cmd, in: inW, out: outR, rd: bufio.NewReaderSize(outR, wire.MaxLine), stderr: &tail{}, waited: make(chan struct{})}
	go func() {
		p.stderr.drain(errR, cfg.Log)
		// Wait only after stderr is drained (os/exec's rule for StderrPipe).
		err := cmd.Wait()
		p.status = exitStatus(err)
		close(p.waited)
	}()
	return p, nil
}

func exitStatus(err error) string {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "it exited with status 0"
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "it was ended by signal " + ws.Signal().String()
		}
		return fmt.Sprintf("it exited with status %d", ee.ExitCode())
	default:
		return err.Error()
	}
}

// exchange writes one line and reads one answer by deadline (or until ctx
// is done).
func (p *proc) exchange(ctx context.Context, line []byte, deadline time.Time) (wire.Answer, error) {
	stop := context.AfterFunc(ctx, func() {
		p.in.SetWriteDeadline(time.Now())
		p.out.SetReadDeadline(time.Now())
	})
	defer stop()
	if err := p.in.SetWriteDeadline(deadline); err != nil {
		return wire.Answer{}, err
	}
	if _, err := p.in.Write(line); err != nil {
		return wire.Answer{}, p.explain("write the request", err)
	}
	if err := p.out.SetReadDeadline(deadline); err != nil {
		return wire.Answer{}, err
	}
	b, err := p.rd.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return wire.Answer{}, fmt.Errorf("wrote a line over the protocol's %d bytes", wire.MaxLine)
	case err != nil:
		return wire.Answer{}, p.explain("read the answer", err)
	}
	a, err := wire.DecodeAnswer(b)
	if err != nil {
		return wire.Answer{}, fmt.Errorf("broke the protocol: %v", err)
	}
	return a, nil
}

func (p *proc) explain(what string, err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return errors.New("did not answer by its deadline; killed")
	}
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.EPIPE) {
		return errors.New("exited")
	}
	return fmt.Errorf("%s: %v", what, err)
}

// stop ends the run: EOF on stdin, then SIGKILL if it has not exited
// within linger; returns how it ended and the end of its stderr.
func (p *proc) stop(linger time.Duration) (status, lastWords string) {
	p.in.Close()
	t := time.NewTimer(linger)
	defer t.Stop()
	select {
	case <-p.waited:
	case <-t.C:
		_ = p.cmd.Process.Kill()
		select {
		case <-p.waited:
		case <-time.After(reapTimeout):
			// Stuck in the kernel past SIGKILL: leave it to the reaper
			// goroutine rather than stall every later request.
			p.out.Close()
			return "it did not exit within " + reapTimeout.String() + " of SIGKILL", p.stderr.String()
		}
	}
	p.out.Close()
	return p.status, p.stderr.String()
}

// reapTimeout bounds the wait for a killed helper to be reaped.
const reapTimeout = 5 * time.Second

// tail keeps the last lines the helper wrote to stderr, bounded, for the
// reason of a crash; each line is logged at debug level, repeats counted.
type tail struct {
	mu    sync.Mutex
	lines []string
}

const (
	tailLines   = 4
	tailLineMax = 200
)

func (t *tail) drain(r io.Reader, log *slog.Logger) {
	br := bufio.NewReaderSize(r, 4096)
	var lim repeats.Limiter
	lim.Window = time.Hour
	for {
		b, err := br.ReadSlice('\n')
		if len(b) > 0 {
			line := strings.ToValidUTF8(string(bytes.TrimRight(b, "\r\n")), "?")
			if len(line) > tailLineMax {
				line = line[:tailLineMax] + "…"
			}
			t.mu.Lock()
			t.lines = append(t.lines, line)
			if len(t.lines) > tailLines {
				t.lines = t.lines[1:]
			}
			t.mu.Unlock()
			if ok, n := lim.Note(stripPID(line), time.Now()); ok {
				log.Debug("nichealth-mad stderr", "line", line, "suppressed", n)
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// stripPID makes libibmad's "ibwarn: [1234] ..." lines of one kind alike.
func stripPID(s string) string {
	if i := strings.Index(s, "] "); i > 0 && strings.HasPrefix(s, "ibwarn: [") {
		return s[i+2:]
	}
	return s
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, " | ")
}
