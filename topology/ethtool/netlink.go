package ethtool

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/topology/genl"
	"github.com/nichealth/nichealthd/topology/module"
)

// What golang.org/x/sys/unix (v0.49.0) lacks of the module EEPROM request:
// its attributes (include/uapi/linux/ethtool_netlink_generated.h,
// torvalds/linux commit 1176978ed851, enum ETHTOOL_A_MODULE_EEPROM_*).
const (
	moduleEEPROMHeader     = 1 // nest: ETHTOOL_A_HEADER_*
	moduleEEPROMOffset     = 2 // u32
	moduleEEPROMLength     = 3 // u32
	moduleEEPROMPage       = 4 // u8
	moduleEEPROMBank       = 5 // u8
	moduleEEPROMI2CAddress = 6 // u8
	moduleEEPROMData       = 7 // binary
	// moduleI2CAddress is the module's management address (0x50, the
	// 8-bit 0xA0 of SFF-8636 and CMIS); moduleI2CAddressA2 an SFP's
	// diagnostics (0x51, SFF-8472's A2h).
	moduleI2CAddress   = 0x50
	moduleI2CAddressA2 = 0x51
)

// Netlink asks the kernel's ethtool netlink family (Linux 5.6 and later)
// about one netdev at a time. Every call is one request on one socket of
// the network namespace it was opened in; it is bounded in size by
// topology/genl and in time by the socket timeout, and a call that hangs
// inside the driver is bounded by the caller (topology/reader's worker).
// Not safe for concurrent use.
type Netlink struct {
	conn   *genl.Conn
	family genl.Family
}

// DialNetlink opens the ethtool family with timeout d for each receive:
//   - (n, nil): the kernel speaks ethtool netlink;
//   - an error wrapping genl.ErrNoFamily: it does not (before Linux 5.6),
//     and nothing here can be read on this host.
func DialNetlink(d time.Duration) (*Netlink, error) {
	c, f, err := genl.DialFamily(unix.ETHTOOL_GENL_NAME, d)
	if err != nil {
		return nil, err
	}
	return &Netlink{conn: c, family: f}, nil
}

// Close releases the socket.
func (n *Netlink) Close() error { return n.conn.Close() }

func header(e *genl.Encoder, ifname string) {
	e.Nested(unix.ETHTOOL_A_LINKSTATE_HEADER, func(h *genl.Encoder) {
		h.String(unix.ETHTOOL_A_HEADER_DEV_NAME, ifname)
	})
}

// LinkState reads ifname's link state (ETHTOOL_MSG_LINKSTATE_GET, allowed
// unprivileged):
//   - (s, nil): the kernel answered; s.HasExt says whether the driver gave
//     a reason (none while the link is up, none from drivers without the
//     callback: veth, bridges, IPoIB);
//   - ENODEV: no such netdev in this namespace;
//   - another error: the request failed.
func (n *Netlink) LinkState(ifname string) (LinkState, error) {
	var e genl.Encoder
	header(&e, ifname)
	msgs, err := n.conn.Do(n.family.ID, unix.ETHTOOL_MSG_LINKSTATE_GET, unix.ETHTOOL_GENL_VERSION, e.Bytes())
	if err != nil {
		return LinkState{}, fmt.Errorf("ethtool netlink %s: link state: %w", ifname, err)
	}
	for _, m := range msgs {
		if m.Cmd == unix.ETHTOOL_MSG_LINKSTATE_GET_REPLY {
			return ParseLinkState(m.Attrs)
		}
	}
	return LinkState{}, fmt.Errorf("ethtool netlink %s: link state: no reply: %w", ifname, genl.ErrMalformed)
}

// ParseLinkState decodes an ETHTOOL_MSG_LINKSTATE_GET_REPLY's attributes.
func ParseLinkState(b []byte) (LinkState, error) {
	attrs, err := genl.ParseAttrs(b)
	if err != nil {
		return LinkState{}, err
	}
	var s LinkState
	for _, a := range attrs {
		switch a.Type {
		case unix.ETHTOOL_A_LINKSTATE_LINK:
			if v, ok := a.Uint8(); ok {
				s.Link, s.HasLink = v != 0, true
			}
		case unix.ETHTOOL_A_LINKSTATE_EXT_STATE:
			if v, ok := a.Uint8(); ok {
				s.Ext, s.HasExt = ExtState(v), true
			}
		case unix.ETHTOOL_A_LINKSTATE_EXT_SUBSTATE:
			s.ExtSubstate, _ = a.Uint8()
		case unix.ETHTOOL_A_LINKSTATE_EXT_DOWN_CNT:
			s.DownCount, s.HasDownCount = a.Uint32()
		}
	}
	return s, nil
}

// ModulePage reads length bytes (at most 128) of a module's page at
// offset (ETHTOOL_MSG_MODULE_EEPROM_GET) at the module's management
// address (0x50). The kernel reads within one half page: offsets 0-127 are
// the lower page whatever the page, and pages above 0 are read at offset
// 128 or more. It needs CAP_NET_ADMIN (GENL_UNS_ADMIN_PERM in
// net/ethtool/netlink.c):
//   - (data, nil): the bytes read, exactly length of them (a shorter reply
//     is refused: its missing bytes would decode as zeros);
//   - EPERM: the caller lacks CAP_NET_ADMIN;
//   - EOPNOTSUPP: the driver reads no modules (veth, bridges);
//   - EIO: mlx5's answer for an empty cage (its MCIA register read fails)
//     and for a page the module does not implement;
//   - ENODEV: no such netdev.
func (n *Netlink) ModulePage(ifname string, page, bank uint8, offset, length uint32) ([]byte, error) {
	return n.ModulePageAt(ifname, moduleI2CAddress, page, bank, offset, length)
}

// ModulePageAt is ModulePage at I2C address addr: 0x50, or 0x51 for an
// SFP's diagnostics (SFF-8472's A2h).
func (n *Netlink) ModulePageAt(ifname string, addr, page, bank uint8, offset, length uint32) ([]byte, error) {
	var e genl.Encoder
	e.Nested(moduleEEPROMHeader, func(h *genl.Encoder) { h.String(unix.ETHTOOL_A_HEADER_DEV_NAME, ifname) })
	e.Uint32(moduleEEPROMOffset, offset)
	e.Uint32(moduleEEPROMLength, length)
	e.Uint8(moduleEEPROMPage, page)
	e.Uint8(moduleEEPROMBank, bank)
	e.Uint8(moduleEEPROMI2CAddress, addr)
	msgs, err := n.conn.Do(n.family.ID, unix.ETHTOOL_MSG_MODULE_EEPROM_GET, unix.ETHTOOL_GENL_VERSION, e.Bytes())
	if err != nil {
		return nil, fmt.Errorf("ethtool netlink %s: module page %02xh offset %d: %w", ifname, page, offset, err)
	}
	for _, m := range msgs {
		if m.Cmd != unix.ETHTOOL_MSG_MODULE_EEPROM_GET_REPLY {
			continue
		}
		data, err := ParseModuleReply(m.Attrs, length)
		if err != nil {
			return nil, fmt.Errorf("ethtool netlink %s: module page %02xh: %w", ifname, page, err)
		}
		return data, nil
	}
	return nil, fmt.Errorf("ethtool netlink %s: module page %02xh: no reply: %w", ifname, page, genl.ErrMalformed)
}

// ParseModuleReply returns the data of an ETHTOOL_MSG_MODULE_EEPROM_GET
// reply to a request for length bytes: exactly that many, or an error.
func ParseModuleReply(b []byte, length uint32) ([]byte, error) {
	attrs, err := genl.ParseAttrs(b)
	if err != nil {
		return nil, err
	}
	for _, a := range attrs {
		if a.Type != moduleEEPROMData {
			continue
		}
		if len(a.Data) > module.PageSize {
			return nil, fmt.Errorf("module data of %d bytes, more than a half page: %w", len(a.Data), genl.ErrMalformed)
		}
		if len(a.Data) != int(length) {
			return nil, fmt.Errorf("module data of %d bytes, asked for %d: %w", len(a.Data), length, genl.ErrMalformed)
		}
		return a.Data, nil
	}
	return nil, fmt.Errorf("module reply without data: %w", genl.ErrMalformed)
}

// Module reads what the diagnostics of ifname's module need (ReadModule).
func (n *Netlink) Module(ifname string) (module.Memory, error) {
	return ReadModule(func(addr, page uint8, offset uint32) ([]byte, error) {
		return n.ModulePageAt(ifname, addr, page, 0, offset, module.PageSize)
	})
}

// PageReader reads one 128-byte half page of bank 0: at I2C address addr
// (0x50, or 0x51 for an SFP's A2h), page page, offset 0 (the lower half)
// or 128 (the upper half).
type PageReader func(addr, page uint8, offset uint32) ([]byte, error)

// ReadModule reads a module's memory through read, asking only for what
// the module advertises and the diagnostics use: the lower page first
// (which says whether a module answers at all), upper page 00h (not of an
// SFP: its identity is in the lower half), then the
// pages module.NextPages names round by round (a page only after the page
// that advertises it), and an SFP's A2h only when A0h byte 92 says it has
// diagnostics there.
//   - a lower page that fails with EIO, EOPNOTSUPP or ENODEV is "no module
//     in this cage" (mlx5 answers EIO for an empty cage): the error wraps
//     module.ErrNoModule as well as the errno;
//   - a wanted page the module refuses (EINVAL, EIO, EOPNOTSUPP: not
//     implemented after all) is left out, which module.Decode reports as
//     missing;
//   - any other failure is the call's error.
func ReadModule(read PageReader) (module.Memory, error) {
	lower, err := read(moduleI2CAddress, 0, 0)
	if errors.Is(err, unix.EIO) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENODEV) {
		return module.Memory{}, fmt.Errorf("%w: %w", module.ErrNoModule, err)
	}
	if err != nil {
		return module.Memory{}, err
	}
	m := module.Memory{Lower: lower, Upper: map[byte][]byte{}}
	// An SFP's identity is all in A0h bytes 0-95; its bytes 128-255 are
	// the vendor's and are not asked for.
	if module.SpecOf(lower[0]) != module.SpecSFF8472 {
		up0, err := read(moduleI2CAddress, 0, module.PageSize)
		if err != nil {
			return module.Memory{}, err
		}
		m.Upper[0] = up0
	}
	refused := map[byte]bool{}
	// NextPages needs at most three rounds (CMIS: 01h, then 02h, 10h and
	// 11h); the bound keeps a module whose answers keep changing from
	// holding the pass.
	for range 3 {
		var asked bool
		for _, p := range module.NextPages(m) {
			if refused[p] {
				continue
			}
			asked = true
			b, err := read(moduleI2CAddress, p, module.PageSize)
			if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EIO) || errors.Is(err, unix.EOPNOTSUPP) {
				refused[p] = true
				continue
			}
			if err != nil {
				return module.Memory{}, err
			}
			m.Upper[p] = b
		}
		if !asked {
			break
		}
	}
	if module.WantsA2(lower) {
		b, err := read(moduleI2CAddressA2, 0, 0)
		switch {
		case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EIO) || errors.Is(err, unix.EOPNOTSUPP):
		case err != nil:
			return module.Memory{}, err
		default:
			m.A2 = b
		}
	}
	return m, nil
}
