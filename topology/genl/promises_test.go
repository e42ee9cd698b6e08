package genl

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// forger is a user-space netlink socket of the same protocol: what any
// process on the host can open, and send from to our socket's port.
func forger(t *testing.T, to *Conn) func(b []byte) {
	t.Helper()
	sa, err := unix.Getsockname(to.fd)
	if err != nil {
		t.Fatal(err)
	}
	dst, ok := sa.(*unix.SockaddrNetlink)
	if !ok || dst.Pid == 0 {
		t.Fatalf("our socket's address %+v", sa)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_GENERIC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		t.Fatal(err)
	}
	return func(b []byte) {
		t.Helper()
		if err := unix.Sendto(fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Pid: dst.Pid}); err != nil {
			t.Skipf("this kernel refuses a unicast between user sockets (%v): nothing to forge", err)
		}
	}
}

// TestGenl_40_12_OnlyTheKernelIsHeard: on a real socket pair, messages a
// process sends to our port (its nl_pid is not 0) are dropped: a forged
// devlink "health report" never reaches the multicast listener, and a
// forged refusal carrying the next request's sequence number does not
// answer that request in the kernel's place.
func TestGenl_40_12_OnlyTheKernelIsHeard(t *testing.T) {
	// The multicast listener.
	c, f, err := DialFamily("nlctrl", 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Join(f.Groups["notify"]); err != nil {
		t.Fatal(err)
	}
	send := forger(t, c)
	send(msg(f.ID, 0, 0, []byte{9, 1, 0, 0, 8, 0, 1, 0, 42, 0, 0, 0}))
	for {
		msgs, err := c.Receive()
		if errors.Is(err, ErrTimeout) {
			break
		}
		for _, m := range msgs {
			if m.Cmd == 9 {
				t.Fatalf("a message from a process was received as the kernel's: %+v (%v)", m, err)
			}
		}
	}

	// A request and its reply.
	r, err := Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.SetTimeout(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	send = forger(t, r)
	send(msg(unix.NLMSG_ERROR, 0, r.seq+1, errBody(-int32(unix.ENOENT), "forged")))
	fam, err := r.Family("nlctrl")
	if err != nil || fam.ID != unix.GENL_ID_CTRL {
		t.Fatalf("the kernel's answer: %+v %v (a forged refusal was taken for it?)", fam, err)
	}
}
