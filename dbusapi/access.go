package dbusapi

import (
	"context"
	"fmt"
	"os/user"
	"slices"
	"strconv"
	"time"

	"github.com/godbus/dbus/v5"
)

// credentials is what the bus says about a caller.
type credentials struct {
	uid uint32
	// gids are the caller process's groups as the bus saw them at connect
	// time; nil when the bus did not report them.
	gids []uint32
}

const credentialsTimeout = 5 * time.Second

// callerCredentials asks the bus who sent a message. GetConnectionCredentials
// (dbus ≥ 1.7) reports the process's real groups (UnixGroupIDs since 1.11),
// which is what a group membership granted by the policy file is checked
// against too; GetConnectionUnixUser is the fallback for older buses.
func (s *Server) callerCredentials(sender string) (credentials, error) {
	ctx, cancel := context.WithTimeout(context.Background(), credentialsTimeout)
	defer cancel()
	bus := s.conn.BusObject()
	var m map[string]dbus.Variant
	err := bus.CallWithContext(ctx, "org.freedesktop.DBus.GetConnectionCredentials", 0, sender).Store(&m)
	if err == nil {
		var c credentials
		uidV, ok := m["UnixUserID"]
		if !ok {
			return c, fmt.Errorf("bus reported no UnixUserID for %s", sender)
		}
		if err := uidV.Store(&c.uid); err != nil {
			return c, fmt.Errorf("UnixUserID of %s: %w", sender, err)
		}
		if g, ok := m["UnixGroupIDs"]; ok {
			if err := g.Store(&c.gids); err != nil {
				return c, fmt.Errorf("UnixGroupIDs of %s: %w", sender, err)
			}
			if c.gids == nil {
				c.gids = []uint32{}
			}
		}
		return c, nil
	}
	var uid uint32
	if err2 := bus.CallWithContext(ctx, "org.freedesktop.DBus.GetConnectionUnixUser", 0, sender).Store(&uid); err2 != nil {
		return credentials{}, fmt.Errorf("ask the bus for the uid of %s: %w (GetConnectionCredentials: %v)", sender, err2, err)
	}
	return credentials{uid: uid}, nil
}

// userGroups is the fallback when the bus does not report groups: the
// user database's view (primary group and supplementary groups).
func userGroups(uid uint32) ([]uint32, error) {
	u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10))
	if err != nil {
		return nil, err
	}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, err
	}
	out := make([]uint32, 0, len(ids))
	for _, id := range ids {
		if n, err := strconv.ParseUint(id, 10, 32); err == nil {
			out = append(out, uint32(n))
		}
	}
	return out, nil
}

// groupID resolves the admin group; ok=false when it does not exist, in
// which case only root is allowed.
func groupID(name string) (uint32, bool) {
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(g.Gid, 10, 32)
	if err != nil {
		return 0, false
	}
	return uint32(n), true
}

// allowed is the whole access rule: root, or a caller in the admin group.
func allowed(c credentials, adminGID uint32, adminExists bool) bool {
	if c.uid == 0 {
		return true
	}
	return adminExists && slices.Contains(c.gids, adminGID)
}

// SetAdminGroup changes the group that may call the mutating methods
// besides root, from the next call on (a configuration reload; revoking a
// group's rights must not wait for a restart). "" is the default group.
func (s *Server) SetAdminGroup(name string) {
	if name == "" {
		name = DefaultGroup
	}
	s.adminGroup.Store(&name)
}

func (s *Server) adminGroupName() string {
	if g := s.adminGroup.Load(); g != nil {
		return *g
	}
	if s.opts.AdminGroup != "" {
		return s.opts.AdminGroup
	}
	return DefaultGroup
}

// authorize enforces the access rule for a mutating method inside the
// daemon, so that a permissive or mistaken bus policy cannot open it up.
// It returns the caller's uid (for the audit trail in events).
func (s *Server) authorize(sender dbus.Sender, method string) (uint32, *dbus.Error) {
	group := s.adminGroupName()
	denied := newError(ErrNameAccessDenied, "access denied: %s needs root or membership in group %s (try sudo)", method, group)
	c, err := s.callerCredentials(string(sender))
	if err != nil {
		s.log.Warn("cannot identify D-Bus caller; denying", "method", method, "sender", string(sender), "err", err)
		return 0, denied
	}
	gid, exists := groupID(group)
	if c.gids == nil && c.uid != 0 && exists {
		if g, err := userGroups(c.uid); err == nil {
			c.gids = g
		} else {
			s.log.Warn("cannot look up the groups of D-Bus caller", "uid", c.uid, "err", err)
		}
	}
	if !allowed(c, gid, exists) {
		// A client retrying in a loop (with a permissive bus policy,
		// every call reaches us) gets one line per minute, with a count.
		if ok, n := s.denials.Note(fmt.Sprintf("%s/%d", method, c.uid), time.Now()); ok {
			s.log.Warn("D-Bus call denied", "method", method, "sender", string(sender), "uid", c.uid, "group", group, "repeats", n)
		}
		return c.uid, denied
	}
	return c.uid, nil
}
