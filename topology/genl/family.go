package genl

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Family is a generic netlink family as the kernel registered it.
type Family struct {
	Name    string
	ID      uint16
	Version uint32
	// Groups are its multicast groups by name.
	Groups map[string]uint32
}

// Family looks a family up by name (CTRL_CMD_GETFAMILY):
//   - (f, nil): the kernel offers it;
//   - ErrNoFamily: it does not (the kernel answers ENOENT);
//   - another error: the lookup itself failed.
func (c *Conn) Family(name string) (Family, error) {
	var e Encoder
	e.String(unix.CTRL_ATTR_FAMILY_NAME, name)
	msgs, err := c.Do(unix.GENL_ID_CTRL, unix.CTRL_CMD_GETFAMILY, 1, e.Bytes())
	if errors.Is(err, unix.ENOENT) {
		return Family{}, fmt.Errorf("%s: %w", name, ErrNoFamily)
	}
	if err != nil {
		return Family{}, fmt.Errorf("look up generic netlink family %s: %w", name, err)
	}
	for _, m := range msgs {
		f, err := ParseFamily(m.Attrs)
		if err != nil {
			return Family{}, fmt.Errorf("look up generic netlink family %s: %w", name, err)
		}
		if f.Name == name && f.ID != 0 {
			return f, nil
		}
	}
	return Family{}, fmt.Errorf("%s: no family in the controller's reply: %w", name, ErrNoFamily)
}

// ParseFamily decodes a CTRL_CMD_NEWFAMILY message's attributes.
func ParseFamily(b []byte) (Family, error) {
	attrs, err := ParseAttrs(b)
	if err != nil {
		return Family{}, err
	}
	f := Family{Groups: map[string]uint32{}}
	for _, a := range attrs {
		switch a.Type {
		case unix.CTRL_ATTR_FAMILY_NAME:
			f.Name = a.String()
		case unix.CTRL_ATTR_FAMILY_ID:
			f.ID, _ = a.Uint16()
		case unix.CTRL_ATTR_VERSION:
			f.Version, _ = a.Uint32()
		case unix.CTRL_ATTR_MCAST_GROUPS:
			groups, err := a.Nested()
			if err != nil {
				return Family{}, err
			}
			for _, g := range groups {
				fields, err := g.Nested()
				if err != nil {
					return Family{}, err
				}
				var name string
				var id uint32
				for _, fa := range fields {
					switch fa.Type {
					case unix.CTRL_ATTR_MCAST_GRP_NAME:
						name = fa.String()
					case unix.CTRL_ATTR_MCAST_GRP_ID:
						id, _ = fa.Uint32()
					}
				}
				if name != "" {
					f.Groups[name] = id
				}
			}
		}
	}
	return f, nil
}

// Join subscribes the socket to a multicast group. The socket should be
// one of its own: notifications would otherwise interleave with replies.
func (c *Conn) Join(group uint32) error {
	if err := unix.SetsockoptInt(c.fd, unix.SOL_NETLINK, unix.NETLINK_ADD_MEMBERSHIP, int(group)); err != nil {
		return fmt.Errorf("join netlink multicast group %d: %w", group, err)
	}
	return nil
}

// Receive waits up to the socket's timeout for multicast messages and
// returns those of one datagram: ErrTimeout when none came, ErrOverrun when
// some were lost.
func (c *Conn) Receive() ([]Message, error) {
	n, err := c.recv()
	if err != nil {
		return nil, err
	}
	msgs, _, err := ParseReplies(c.buf[:n], 0)
	for i := range msgs {
		msgs[i].Attrs = append([]byte(nil), msgs[i].Attrs...)
	}
	return msgs, err
}

// DialFamily opens a socket with timeout d and looks family name up.
func DialFamily(name string, d time.Duration) (*Conn, Family, error) {
	c, err := Dial()
	if err != nil {
		return nil, Family{}, err
	}
	if err := c.SetTimeout(d); err != nil {
		c.Close()
		return nil, Family{}, err
	}
	f, err := c.Family(name)
	if err != nil {
		c.Close()
		return nil, Family{}, err
	}
	return c, f, nil
}
