package notifytest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Message is one sd_notify datagram as the service manager sees it.
type Message struct {
	// PID, UID and GID come from SCM_CREDENTIALS, which the kernel fills
	// in; systemd uses the pid to attribute messages to the main process.
	PID int32
	UID uint32
	GID uint32
	// Raw is the datagram; Lines its newline-separated assignments.
	Raw   string
	Lines []string
}

// Get returns the value of the first KEY=value line for key.
func (m Message) Get(key string) (string, bool) {
	for _, l := range m.Lines {
		if k, v, ok := strings.Cut(l, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// Has reports whether the message carries KEY=value.
func (m Message) Has(key, value string) bool {
	v, ok := m.Get(key)
	return ok && v == value
}

// ErrClosed is returned by Next once the listener is closed and drained.
var ErrClosed = errors.New("notifytest: listener closed")

// ErrTimeout is returned by Next and WaitFor when nothing matched in time.
var ErrTimeout = errors.New("notifytest: timed out waiting for a notification")

// Listener is a fake NOTIFY_SOCKET. It is safe for concurrent use.
type Listener struct {
	// Path is the socket path, the value for NOTIFY_SOCKET.
	Path string

	dir  string
	conn *net.UnixConn
	done chan struct{}

	mu     sync.Mutex
	all    []Message
	next   int // index of the first message Next has not returned
	wake   chan struct{}
	closed bool
	rerr   error

	closeOnce sync.Once
	closeErr  error
}

// Listen creates the socket in a fresh directory under os.TempDir (socket
// paths are limited to 108 bytes, which deep test temp dirs exceed) with
// SO_PASSCRED set, and starts receiving. Close removes the directory.
func Listen() (*Listener, error) {
	dir, err := os.MkdirTemp("", "nh-notify-")
	if err != nil {
		return nil, fmt.Errorf("notifytest: temp dir: %w", err)
	}
	path := filepath.Join(dir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("notifytest: listen %s: %w", path, err)
	}
	// systemd's manager socket is world-writable so that services running
	// as an unprivileged User= can notify; do the same.
	if err := os.Chmod(path, 0o777); err != nil {
		conn.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("notifytest: chmod %s: %w", path, err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		conn.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("notifytest: chmod %s: %w", dir, err)
	}
	if err := setPassCred(conn); err != nil {
		conn.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	l := &Listener{Path: path, dir: dir, conn: conn, done: make(chan struct{}), wake: make(chan struct{})}
	go l.receive()
	return l, nil
}

func setPassCred(conn *net.UnixConn) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return fmt.Errorf("notifytest: raw conn: %w", err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
	}); err != nil {
		return fmt.Errorf("notifytest: control: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("notifytest: setsockopt SO_PASSCRED: %w", serr)
	}
	return nil
}

// Env returns "NOTIFY_SOCKET=<Path>", for a child process's environment.
func (l *Listener) Env() string { return "NOTIFY_SOCKET=" + l.Path }

func (l *Listener) receive() {
	defer close(l.done)
	buf := make([]byte, 64*1024)
	oob := make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	for {
		n, oobn, _, _, err := l.conn.ReadMsgUnix(buf, oob)
		if err != nil {
			l.mu.Lock()
			if !l.closed {
				l.rerr = err
			}
			l.closed = true
			l.signal()
			l.mu.Unlock()
			return
		}
		m := Message{PID: -1, Raw: string(buf[:n])}
		for _, line := range strings.Split(m.Raw, "\n") {
			if line != "" {
				m.Lines = append(m.Lines, line)
			}
		}
		if cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for _, c := range cmsgs {
				if cred, err := unix.ParseUnixCredentials(&c); err == nil {
					m.PID, m.UID, m.GID = cred.Pid, cred.Uid, cred.Gid
				}
			}
		}
		l.mu.Lock()
		l.all = append(l.all, m)
		l.signal()
		l.mu.Unlock()
	}
}

// signal wakes every waiter; callers hold mu.
func (l *Listener) signal() {
	close(l.wake)
	l.wake = make(chan struct{})
}

// Next returns the oldest message not yet returned by Next or WaitFor,
// waiting up to timeout for one. It returns ErrTimeout when none came and
// ErrClosed after Close once every message was returned.
func (l *Listener) Next(timeout time.Duration) (Message, error) {
	return l.WaitFor(timeout, func(Message) bool { return true })
}

// WaitFor consumes messages in order until one satisfies match and returns
// it; consumed messages that did not match are skipped (Received still has
// them). It waits up to timeout in all.
func (l *Listener) WaitFor(timeout time.Duration, match func(Message) bool) (Message, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		for l.next < len(l.all) {
			m := l.all[l.next]
			l.next++
			if match(m) {
				l.mu.Unlock()
				return m, nil
			}
		}
		if l.closed {
			err := l.rerr
			l.mu.Unlock()
			if err != nil {
				return Message{}, fmt.Errorf("notifytest: receive on %s: %w", l.Path, err)
			}
			return Message{}, ErrClosed
		}
		wake := l.wake
		l.mu.Unlock()
		select {
		case <-wake:
		case <-deadline.C:
			return Message{}, ErrTimeout
		}
	}
}

// Received returns every message received so far, consumed or not.
func (l *Listener) Received() []Message {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Message(nil), l.all...)
}

// Count returns how many received messages carry KEY=value.
func (l *Listener) Count(key, value string) int {
	n := 0
	for _, m := range l.Received() {
		if m.Has(key, value) {
			n++
		}
	}
	return n
}

// Close stops receiving and removes the socket and its directory. Messages
// already received stay available to Next, WaitFor and Received.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		err := l.conn.Close()
		<-l.done
		if rerr := os.RemoveAll(l.dir); rerr != nil && err == nil {
			err = rerr
		}
		l.closeErr = err
	})
	return l.closeErr
}
