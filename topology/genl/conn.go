package genl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Size bounds of what is read from the kernel.
const (
	// MaxMessage is the receive buffer of one recvmsg: the kernel builds
	// dump batches of at most 32 KiB (netlink_dump's allocation), replies
	// of one page; a datagram that does not fit is an error, never half
	// read.
	MaxMessage = 64 << 10
	// MaxDump bounds a whole dump (every devlink reporter of 256 functions
	// is well under 1 MiB).
	MaxDump = 4 << 20
)

const (
	nlmsgHeader  = 16 // struct nlmsghdr
	genlHeader   = 4  // struct genlmsghdr
	nlmFAckTLVs  = 0x200
	nlmsgerrBase = 4 + nlmsgHeader // int error; struct nlmsghdr msg
)

var (
	// ErrNoFamily: the kernel has no such generic netlink family (devlink
	// not built, ethtool netlink before Linux 5.6).
	ErrNoFamily = errors.New("generic netlink family not offered by this kernel")
	// ErrTimeout: the kernel sent nothing within the socket's timeout.
	ErrTimeout = errors.New("no netlink reply within the timeout")
	// ErrTooLarge: a message or a dump beyond MaxMessage or MaxDump.
	ErrTooLarge = errors.New("netlink reply larger than the bound")
	// ErrOverrun: multicast messages were lost (ENOBUFS): the receiver
	// fell behind and must re-read what it watches.
	ErrOverrun = errors.New("netlink multicast messages lost (receive queue overrun)")
)

// Error is an error the kernel answered a request with.
type Error struct {
	Errno   unix.Errno
	Message string // the extended acknowledgement's text, if any
}

func (e *Error) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("%v (%s)", e.Errno, e.Message)
	}
	return e.Errno.Error()
}

func (e *Error) Unwrap() error { return e.Errno }

// Message is one generic netlink message: its command and attributes.
type Message struct {
	Cmd     uint8
	Version uint8
	Attrs   []byte
}

// Conn is a NETLINK_GENERIC socket. It belongs to the network namespace
// of the thread that opened it, whatever thread uses it afterwards. A Conn
// is not safe for concurrent use.
type Conn struct {
	fd  int
	seq uint32
	buf []byte
}

// Dial opens a generic netlink socket with extended acknowledgements (the
// kernel's reason for a refusal) and capped acknowledgements (an error does
// not echo the request back).
func Dial() (*Conn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_GENERIC)
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	c := &Conn{fd: fd, seq: uint32(time.Now().UnixNano()), buf: make([]byte, MaxMessage)}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		c.Close()
		return nil, fmt.Errorf("netlink bind: %w", err)
	}
	// Both are best effort: kernels before 4.12 lack them, and the
	// replies are read the same way without.
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_EXT_ACK, 1)
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1)
	return c, nil
}

// SetTimeout bounds every receive (and send) of the socket: a kernel that
// never answers, or a multicast wait, ends in ErrTimeout after d.
func (c *Conn) SetTimeout(d time.Duration) error {
	tv := unix.NsecToTimeval(d.Nanoseconds())
	if err := unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("netlink SO_RCVTIMEO: %w", err)
	}
	if err := unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv); err != nil {
		return fmt.Errorf("netlink SO_SNDTIMEO: %w", err)
	}
	return nil
}

// Close releases the socket.
func (c *Conn) Close() error {
	if c.fd < 0 {
		return nil
	}
	err := unix.Close(c.fd)
	c.fd = -1
	return err
}

// request frames one generic netlink request.
func request(family uint16, flags uint16, seq uint32, cmd, version uint8, attrs []byte) []byte {
	b := make([]byte, nlmsgHeader+genlHeader, nlmsgHeader+genlHeader+len(attrs))
	binary.NativeEndian.PutUint32(b[0:4], uint32(nlmsgHeader+genlHeader+len(attrs)))
	binary.NativeEndian.PutUint16(b[4:6], family)
	binary.NativeEndian.PutUint16(b[6:8], flags)
	binary.NativeEndian.PutUint32(b[8:12], seq)
	b[16], b[17] = cmd, version
	return append(b, attrs...)
}

// Do sends one request and returns its replies, ended by the kernel's
// acknowledgement; a refusal is an *Error carrying the errno.
func (c *Conn) Do(family uint16, cmd, version uint8, attrs []byte) ([]Message, error) {
	return c.exchange(family, unix.NLM_F_REQUEST|unix.NLM_F_ACK, cmd, version, attrs)
}

// Dump sends a dump request and returns every message until NLMSG_DONE.
func (c *Conn) Dump(family uint16, cmd, version uint8, attrs []byte) ([]Message, error) {
	return c.exchange(family, unix.NLM_F_REQUEST|unix.NLM_F_DUMP, cmd, version, attrs)
}

func (c *Conn) exchange(family, flags uint16, cmd, version uint8, attrs []byte) ([]Message, error) {
	if c.fd < 0 {
		return nil, fmt.Errorf("netlink: %w", unix.EBADF)
	}
	c.seq++
	seq := c.seq
	if err := unix.Sendto(c.fd, request(family, flags, seq, cmd, version, attrs), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		if errors.Is(err, unix.EAGAIN) {
			return nil, ErrTimeout
		}
		return nil, fmt.Errorf("netlink send: %w", err)
	}
	var out []Message
	total := 0
	for {
		n, err := c.recv()
		if err != nil {
			return nil, err
		}
		total += n
		if total > MaxDump {
			return nil, fmt.Errorf("netlink reply of more than %d bytes: %w", MaxDump, ErrTooLarge)
		}
		msgs, done, err := ParseReplies(c.buf[:n], seq)
		// The buffer is read into again: the messages keep copies.
		for _, m := range msgs {
			m.Attrs = append([]byte(nil), m.Attrs...)
			out = append(out, m)
		}
		if err != nil || done {
			return out, err
		}
	}
}

// recv reads one datagram from the kernel into c.buf; anything another
// process sent to this socket's port is dropped.
func (c *Conn) recv() (int, error) {
	for {
		n, _, flags, from, err := unix.Recvmsg(c.fd, c.buf, nil, 0)
		if nl, ok := from.(*unix.SockaddrNetlink); ok && err == nil && nl.Pid != 0 {
			continue
		}
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return 0, ErrTimeout
		case errors.Is(err, unix.ENOBUFS):
			return 0, ErrOverrun
		case err != nil:
			return 0, fmt.Errorf("netlink receive: %w", err)
		case flags&unix.MSG_TRUNC != 0:
			return 0, fmt.Errorf("netlink datagram over %d bytes: %w", MaxMessage, ErrTooLarge)
		}
		return n, nil
	}
}

// ParseReplies walks one datagram of replies to the request seq: the
// generic netlink messages it carries, whether the exchange is over
// (acknowledgement, NLMSG_DONE, or an error) and the kernel's error.
// Messages of another sequence number are skipped (a late answer to a
// request that timed out); seq 0 takes any (multicast).
func ParseReplies(b []byte, seq uint32) (msgs []Message, done bool, err error) {
	for len(b) >= nlmsgHeader {
		l := int(binary.NativeEndian.Uint32(b[0:4]))
		typ := binary.NativeEndian.Uint16(b[4:6])
		flags := binary.NativeEndian.Uint16(b[6:8])
		mseq := binary.NativeEndian.Uint32(b[8:12])
		if l < nlmsgHeader || l > len(b) {
			return msgs, true, fmt.Errorf("netlink message of length %d in %d bytes: %w", l, len(b), ErrMalformed)
		}
		body := b[nlmsgHeader:l]
		next := align4(l)
		if next > len(b) {
			next = len(b)
		}
		b = b[next:]
		if seq != 0 && mseq != seq {
			continue
		}
		switch typ {
		case unix.NLMSG_NOOP:
			continue
		case unix.NLMSG_ERROR, unix.NLMSG_DONE:
			if len(body) < 4 {
				if typ == unix.NLMSG_DONE {
					return msgs, true, nil
				}
				return msgs, true, fmt.Errorf("netlink error message of %d bytes: %w", len(body), ErrMalformed)
			}
			code := int32(binary.NativeEndian.Uint32(body[0:4]))
			if code == 0 {
				return msgs, true, nil
			}
			e := &Error{Errno: unix.Errno(-code)}
			tlvAt := 4
			if typ == unix.NLMSG_ERROR {
				tlvAt = nlmsgerrBase
				if flags&nlmFAckTLVs == 0 || len(body) < tlvAt {
					return msgs, true, e
				}
			}
			if flags&nlmFAckTLVs != 0 && len(body) > tlvAt {
				if attrs, perr := ParseAttrs(body[tlvAt:]); perr == nil {
					for _, a := range attrs {
						if a.Type == unix.NLMSGERR_ATTR_MSG {
							e.Message = a.String()
						}
					}
				}
			}
			return msgs, true, e
		case unix.NLMSG_OVERRUN:
			return msgs, true, ErrOverrun
		}
		if len(body) < genlHeader {
			return msgs, true, fmt.Errorf("generic netlink message of %d bytes: %w", len(body), ErrMalformed)
		}
		msgs = append(msgs, Message{Cmd: body[0], Version: body[1], Attrs: body[genlHeader:]})
	}
	return msgs, false, nil
}
