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
	// 8-bit 0xA0 of SFF-8636 and CMIS).
	moduleI2CAddress = 0x50
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
// offset (ETHTOOL_MSG_MODULE_EEPROM_GET). The kernel reads within one half
// page: offsets 0-127 are the lower page whatever the page, and pages above
// 0 are read at offset 128 or more. It needs CAP_NET_ADMIN
// (GENL_UNS_ADMIN_PERM in net/ethtool/netlink.c):
//   - (data, nil): the bytes read;
//   - EPERM: the caller lacks CAP_NET_ADMIN;
//   - EOPNOTSUPP: the driver reads no modules (veth, bridges), or no module
//     is plugged (mlx5 answers EIO or EINVAL for an empty cage);
//   - ENODEV: no such netdev.
func (n *Netlink) ModulePage(ifname string, page, bank uint8, offset, length uint32) ([]byte, error) {
	var e genl.Encoder
	e.Nested(moduleEEPROMHeader, func(h *genl.Encoder) { h.String(unix.ETHTOOL_A_HEADER_DEV_NAME, ifname) })
	e.Uint32(moduleEEPROMOffset, offset)
	e.Uint32(moduleEEPROMLength, length)
	e.Uint8(moduleEEPROMPage, page)
	e.Uint8(moduleEEPROMBank, bank)
	e.Uint8(moduleEEPROMI2CAddress, moduleI2CAddress)
	msgs, err := n.conn.Do(n.family.ID, unix.ETHTOOL_MSG_MODULE_EEPROM_GET, unix.ETHTOOL_GENL_VERSION, e.Bytes())
	if err != nil {
		return nil, fmt.Errorf("ethtool netlink %s: module page %02xh offset %d: %w", ifname, page, offset, err)
	}
	for _, m := range msgs {
		if m.Cmd != unix.ETHTOOL_MSG_MODULE_EEPROM_GET_REPLY {
			continue
		}
		data, err := ParseModuleReply(m.Attrs)
		if err != nil {
			return nil, fmt.Errorf("ethtool netlink %s: module page %02xh: %w", ifname, page, err)
		}
		if len(data) != int(length) {
			return nil, fmt.Errorf("ethtool netlink %s: module page %02xh: %d bytes, asked for %d: %w", ifname, page, len(data), length, genl.ErrMalformed)
		}
		return data, nil
	}
	return nil, fmt.Errorf("ethtool netlink %s: module page %02xh: no reply: %w", ifname, page, genl.ErrMalformed)
}

// ParseModuleReply returns the data of an ETHTOOL_MSG_MODULE_EEPROM_GET
// reply.
func ParseModuleReply(b []byte) ([]byte, error) {
	attrs, err := genl.ParseAttrs(b)
	if err != nil {
		return nil, err
	}
	for _, a := range attrs {
		if a.Type == moduleEEPROMData {
			if len(a.Data) > module.PageSize {
				return nil, fmt.Errorf("module data of %d bytes, more than a half page: %w", len(a.Data), genl.ErrMalformed)
			}
			return a.Data, nil
		}
	}
	return nil, fmt.Errorf("module reply without data: %w", genl.ErrMalformed)
}

// Module reads what the diagnostics of ifname's module need: the lower
// page and upper page 00h, then the pages module.PagesWanted names. A
// wanted page that the module refuses (EINVAL, EIO: not implemented) is
// left out, which module.Decode reports as missing; a failure of the lower
// page or of page 00h is the call's error.
func (n *Netlink) Module(ifname string) (module.Memory, error) {
	lower, err := n.ModulePage(ifname, 0, 0, 0, module.PageSize)
	if err != nil {
		return module.Memory{}, err
	}
	up0, err := n.ModulePage(ifname, 0, 0, module.PageSize, module.PageSize)
	if err != nil {
		return module.Memory{}, err
	}
	m := module.Memory{Lower: lower, Upper: map[byte][]byte{0: up0}}
	for _, p := range module.PagesWanted(lower) {
		b, err := n.ModulePage(ifname, p, 0, module.PageSize, module.PageSize)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EIO) || errors.Is(err, unix.EOPNOTSUPP) {
			continue
		}
		if err != nil {
			return module.Memory{}, err
		}
		m.Upper[p] = b
	}
	return m, nil
}
