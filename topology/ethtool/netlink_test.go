package ethtool

import (
	"errors"
	"os/exec"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// dialIn opens the ethtool netlink socket inside ns: it answers for that
// namespace's netdevs from any thread afterwards.
func dialIn(t *testing.T, ns string) *Netlink {
	t.Helper()
	var n *Netlink
	var err error
	inNetns(t, ns, func() { n, err = DialNetlink(5 * time.Second) })
	if err != nil {
		t.Fatalf("ethtool netlink in %s: %v", ns, err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// The real kernel, a veth pair and an empty bridge in a namespace of the
// test's own: LINKSTATE_GET answers with the carrier and no reason (neither
// driver has the extended state callback), MODULE_EEPROM_GET answers "not
// supported", a netdev that is not there is ENODEV. Nothing here is a
// fault, and the socket stays usable after each refusal.
func TestLinkStory_EthtoolNetlinkOnVethAndBridge(t *testing.T) {
	ns, _ := vethNetns(t)
	if out, err := exec.Command("ip", "-n", ns, "link", "add", "br0", "type", "bridge").CombinedOutput(); err != nil {
		t.Fatalf("ip link add br0: %v: %s", err, out)
	}
	if out, err := exec.Command("ip", "-n", ns, "link", "set", "br0", "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set br0 up: %v: %s", err, out)
	}
	n := dialIn(t, ns)
	for _, dev := range []string{"va", "br0"} {
		s, err := n.LinkState(dev)
		if err != nil {
			t.Fatalf("%s: link state: %v", dev, err)
		}
		if !s.HasLink || s.HasExt || s.Reason() != "" {
			t.Errorf("%s: %+v; want the carrier and no extended state", dev, s)
		}
		if _, err := n.ModulePage(dev, 0, 0, 0, 128); !errors.Is(err, unix.EOPNOTSUPP) {
			t.Errorf("%s: module EEPROM: %v, want EOPNOTSUPP", dev, err)
		}
		if _, err := n.Module(dev); !errors.Is(err, unix.EOPNOTSUPP) {
			t.Errorf("%s: module: %v, want EOPNOTSUPP", dev, err)
		}
	}
	// The carrier follows the peer, and a veth whose link is down still
	// gives no reason: nothing to say rather than something wrong.
	if s, err := n.LinkState("va"); err != nil || !s.Link {
		t.Fatalf("va with its peer up: %+v, %v", s, err)
	}
	if out, err := exec.Command("ip", "-n", ns, "link", "set", "vb", "down").CombinedOutput(); err != nil {
		t.Fatalf("ip link set vb down: %v: %s", err, out)
	}
	if s, err := n.LinkState("va"); err != nil || s.Link || s.HasExt {
		t.Errorf("va with its peer down: %+v, %v; want no carrier, no reason", s, err)
	}
	if _, err := n.LinkState("nh-absent0"); !errors.Is(err, unix.ENODEV) {
		t.Errorf("absent netdev: %v, want ENODEV", err)
	}
	if _, err := n.ModulePage("nh-absent0", 0, 0, 0, 128); !errors.Is(err, unix.ENODEV) {
		t.Errorf("absent netdev's module: %v, want ENODEV", err)
	}
	// The socket belongs to the namespace (the test's own has no va) and
	// stays usable after the refusals.
	if _, err := n.LinkState("va"); err != nil {
		t.Errorf("after the refusals: %v", err)
	}
}

// Replies as the kernel builds them for an mlx5 port whose cable was
// pulled and one whose module is not ready, and the newer states x/sys
// does not name.
func TestLinkStory_LinkStateReplies(t *testing.T) {
	for _, tc := range []struct {
		name       string
		attrs      []byte
		reason     string
		names      [2]string
		hasDownCnt bool
	}{
		{"no cable (mlx5 status opcode 1024)", attrsOf(t, linkAttrs{link: 0, ext: 4}), "no cable", [2]string{"no_cable", ""}, false},
		{"cable issue: unsupported cable", attrsOf(t, linkAttrs{link: 0, ext: 5, sub: 1}), "cable issue: unsupported cable", [2]string{"cable_issue", "unsupported_cable"}, false},
		{"module not ready (state 10, substate 1)", attrsOf(t, linkAttrs{link: 0, ext: 10, sub: 1, down: 7}), "transceiver module problem: the CMIS module is not in ModuleReady state", [2]string{"module", "cmis_not_ready"}, true},
		{"SerDes ALOS (bad signal integrity substate 4)", attrsOf(t, linkAttrs{link: 0, ext: 3, sub: 4}), "bad signal integrity: SerDes analog loss of signal", [2]string{"bad_signal_integrity", "serdes_alos"}, false},
		{"a newer kernel's state", attrsOf(t, linkAttrs{link: 0, ext: 42, sub: 3}), "extended link state 42: substate 3", [2]string{"state_42", "substate_3"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseLinkState(tc.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if !s.HasLink || s.Link || !s.HasExt || s.Reason() != tc.reason || s.Ext.Name() != tc.names[0] || s.Ext.SubName(s.ExtSubstate) != tc.names[1] || s.HasDownCount != tc.hasDownCnt {
				t.Errorf("%+v: reason %q names %q %q", s, s.Reason(), s.Ext.Name(), s.Ext.SubName(s.ExtSubstate))
			}
		})
	}
}

type linkAttrs struct{ link, ext, sub, down int }

func attrsOf(t *testing.T, a linkAttrs) []byte {
	t.Helper()
	var e encoder
	e.u8(unix.ETHTOOL_A_LINKSTATE_LINK, uint8(a.link))
	e.u8(unix.ETHTOOL_A_LINKSTATE_EXT_STATE, uint8(a.ext))
	if a.sub != 0 {
		e.u8(unix.ETHTOOL_A_LINKSTATE_EXT_SUBSTATE, uint8(a.sub))
	}
	if a.down != 0 {
		e.u32(unix.ETHTOOL_A_LINKSTATE_EXT_DOWN_CNT, uint32(a.down))
	}
	return e.b
}

func FuzzParseEthtoolReplies(f *testing.F) {
	f.Add(attrsOf(&testing.T{}, linkAttrs{link: 0, ext: 10, sub: 1, down: 3}))
	var e encoder
	e.u8(moduleEEPROMData, 0x11)
	f.Add(e.b)
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := ParseLinkState(b); err == nil {
			_ = s.Reason()
			_ = s.Ext.Name() + s.Ext.SubName(s.ExtSubstate)
		}
		for _, n := range []uint32{1, 128} {
			if d, err := ParseModuleReply(b, n); err == nil && len(d) != int(n) {
				t.Fatalf("module reply of %d bytes accepted for %d asked", len(d), n)
			}
		}
	})
}
