package genl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// msg frames one netlink message of type typ for the tests.
func msg(typ, flags uint16, seq uint32, body []byte) []byte {
	b := make([]byte, nlmsgHeader, nlmsgHeader+len(body)+3)
	binary.NativeEndian.PutUint32(b[0:4], uint32(nlmsgHeader+len(body)))
	binary.NativeEndian.PutUint16(b[4:6], typ)
	binary.NativeEndian.PutUint16(b[6:8], flags)
	binary.NativeEndian.PutUint32(b[8:12], seq)
	b = append(b, body...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func errBody(code int32, text string) []byte {
	b := make([]byte, nlmsgerrBase)
	binary.NativeEndian.PutUint32(b[0:4], uint32(code))
	if text != "" {
		var e Encoder
		e.String(unix.NLMSGERR_ATTR_MSG, text)
		b = append(b, e.Bytes()...)
	}
	return b
}

func TestGenl_AttrsRoundTrip(t *testing.T) {
	var e Encoder
	e.Uint8(1, 7)
	e.Uint32(2, 0xdeadbeef)
	e.String(3, "mlx5_0")
	e.Nested(4, func(n *Encoder) { n.String(1, "fw_fatal"); n.Uint8(2, 1) })
	attrs, err := ParseAttrs(e.Bytes())
	if err != nil || len(attrs) != 4 {
		t.Fatalf("ParseAttrs: %v, %v", attrs, err)
	}
	if v, _ := attrs[0].Uint8(); v != 7 {
		t.Errorf("u8 %d", v)
	}
	if v, _ := attrs[1].Uint32(); v != 0xdeadbeef {
		t.Errorf("u32 %x", v)
	}
	if v, _ := attrs[1].Uint64(); v != 0xdeadbeef {
		t.Errorf("a u32 read as the kernel's variable-width uint: %x", v)
	}
	if attrs[2].String() != "mlx5_0" {
		t.Errorf("string %q", attrs[2].String())
	}
	if attrs[3].Type != 4 {
		t.Errorf("nested type %d: the NLA_F_NESTED flag must be masked off", attrs[3].Type)
	}
	inner, err := attrs[3].Nested()
	if err != nil || len(inner) != 2 || inner[0].String() != "fw_fatal" {
		t.Errorf("nested %v, %v", inner, err)
	}
	for _, bad := range [][]byte{{8, 0, 1, 0, 0}, {2, 0, 1, 0}, {0xff, 0xff, 1, 0, 0, 0, 0, 0}} {
		if _, err := ParseAttrs(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseAttrs(% x): %v, want ErrMalformed", bad, err)
		}
	}
	if _, ok := (Attr{Data: []byte{1}}).Uint32(); ok {
		t.Error("a 1-byte attribute read as u32")
	}
}

func TestGenl_RepliesOfTheRequestOnly(t *testing.T) {
	reply := func(seq uint32, cmd uint8) []byte {
		return msg(30, 0, seq, []byte{cmd, 1, 0, 0, 8, 0, 1, 0, 42, 0, 0, 0})
	}
	for _, tc := range []struct {
		name     string
		in       []byte
		wantCmds []uint8
		done     bool
		errno    unix.Errno
		text     string
	}{
		{"reply then ack", append(reply(5, 9), msg(unix.NLMSG_ERROR, 0, 5, errBody(0, ""))...), []uint8{9}, true, 0, ""},
		{"a late reply to an earlier request is dropped", append(reply(4, 8), reply(5, 9)...), []uint8{9}, false, 0, ""},
		{"dump parts then done", append(append(reply(5, 1), reply(5, 2)...), msg(unix.NLMSG_DONE, 0, 5, []byte{0, 0, 0, 0})...), []uint8{1, 2}, true, 0, ""},
		{"refusal with the kernel's reason", msg(unix.NLMSG_ERROR, nlmFAckTLVs, 5, errBody(-int32(unix.EOPNOTSUPP), "module EEPROM not supported")), nil, true, unix.EOPNOTSUPP, "module EEPROM not supported"},
		{"refusal without one", msg(unix.NLMSG_ERROR, 0, 5, errBody(-int32(unix.ENODEV), "")), nil, true, unix.ENODEV, ""},
		{"a dump that failed", msg(unix.NLMSG_DONE, 0, 5, []byte{0xed, 0xff, 0xff, 0xff}), nil, true, unix.Errno(19), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msgs, done, err := ParseReplies(tc.in, 5)
			var cmds []uint8
			for _, m := range msgs {
				cmds = append(cmds, m.Cmd)
			}
			if !bytes.Equal(cmds, tc.wantCmds) || done != tc.done {
				t.Errorf("commands %v done %v; want %v %v", cmds, done, tc.wantCmds, tc.done)
			}
			var ke *Error
			switch {
			case tc.errno == 0 && err != nil:
				t.Errorf("error %v", err)
			case tc.errno != 0 && (!errors.As(err, &ke) || !errors.Is(err, tc.errno) || ke.Message != tc.text):
				t.Errorf("error %v; want errno %v with %q", err, tc.errno, tc.text)
			}
		})
	}
	if _, _, err := ParseReplies([]byte{200, 0, 0, 0, 2, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0}, 5); !errors.Is(err, ErrMalformed) {
		t.Errorf("truncated message: %v", err)
	}
}

// The real kernel's controller: ethtool's family and its monitor group are
// there on every kernel since 5.6; a family that does not exist is
// ErrNoFamily, not a failure.
func TestGenl_FamilyLookupRealKernel(t *testing.T) {
	c, f, err := DialFamily("ethtool", 5*time.Second)
	if err != nil {
		t.Fatalf("ethtool family: %v", err)
	}
	defer c.Close()
	if f.ID == 0 || f.Version < 1 {
		t.Errorf("ethtool family %+v", f)
	}
	if _, ok := f.Groups["monitor"]; !ok {
		t.Errorf("ethtool family without its monitor group: %+v", f.Groups)
	}
	if _, err := c.Family("nh-no-family"); !errors.Is(err, ErrNoFamily) {
		t.Errorf("absent family: %v, want ErrNoFamily", err)
	}
	// The socket stays usable after a refusal.
	if _, err := c.Family("ethtool"); err != nil {
		t.Errorf("lookup after a refusal: %v", err)
	}
}

// A multicast wait with nothing to receive ends at the socket's timeout.
func TestGenl_ReceiveTimesOut(t *testing.T) {
	c, f, err := DialFamily("ethtool", 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Join(f.Groups["monitor"]); err != nil {
		t.Fatal(err)
	}
	// Only netdev changes in this namespace would arrive; none are made.
	for range 3 {
		if _, err := c.Receive(); err != nil && !errors.Is(err, ErrTimeout) {
			t.Fatalf("receive: %v", err)
		}
	}
}

func FuzzParseReplies(f *testing.F) {
	f.Add(append(msg(30, 0, 5, []byte{9, 1, 0, 0, 8, 0, 1, 0, 42, 0, 0, 0}), msg(unix.NLMSG_ERROR, 0, 5, errBody(0, ""))...))
	f.Add(msg(unix.NLMSG_ERROR, nlmFAckTLVs, 5, errBody(-95, "not supported")))
	f.Add(msg(unix.NLMSG_DONE, nlmFAckTLVs, 5, append([]byte{0xed, 0xff, 0xff, 0xff}, 9, 0, 1, 0, 'x', 0, 0, 0)))
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, _, _ := ParseReplies(b, 5)
		for _, m := range msgs {
			attrs, _ := ParseAttrs(m.Attrs)
			for _, a := range attrs {
				_ = a.String()
				_, _ = a.Uint64()
				_, _ = a.Nested()
			}
		}
		_, _ = ParseFamily(b)
	})
}
