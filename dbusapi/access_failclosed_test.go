package dbusapi

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"slices"
	"strconv"
	"testing"

	"github.com/godbus/dbus/v5"

	"github.com/nichealth/nichealthd/dbusapi/localbus"
	"github.com/nichealth/nichealthd/internal/component"
)

// accessServer is a Server with just what authorize needs, on a private
// system-type bus.
func accessServer(t *testing.T) (*Server, *dbus.Conn) {
	t.Helper()
	if _, err := exec.LookPath("dbus-daemon"); err != nil {
		component.Missing(t, "dbus-daemon not installed (apt-get install dbus)")
	}
	b, err := localbus.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	conn, err := dbus.Connect(b.Address)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &Server{conn: conn, opts: Options{AdminGroup: DefaultGroup}, log: slog.New(slog.DiscardHandler)}, conn
}

// TestAccess_CredentialsUnavailableDenied: when the bus cannot say who a
// caller is (the caller is gone, the bus refuses to answer), a mutating
// method is denied, root or not. Failing open here would let any local
// user acknowledge a fatal breach.
func TestAccess_CredentialsUnavailableDenied(t *testing.T) {
	s, conn := accessServer(t)
	for _, sender := range []string{":1.424242", "org.nichealth.NoSuchName", ""} {
		uid, derr := s.authorize(dbus.Sender(sender), "AcknowledgeReset")
		if derr == nil {
			t.Fatalf("sender %q with no credentials was allowed (uid %d)", sender, uid)
		}
		if derr.Name != ErrNameAccessDenied {
			t.Fatalf("sender %q: error %s, want %s", sender, derr.Name, ErrNameAccessDenied)
		}
	}
	// The same server lets a caller it can identify through, so the denial
	// above is about the missing credentials, not a server that denies all.
	if os.Geteuid() == 0 {
		if uid, derr := s.authorize(dbus.Sender(conn.Names()[0]), "AcknowledgeReset"); derr != nil || uid != 0 {
			t.Fatalf("root caller: uid %d, %v", uid, derr)
		}
	}
}

// TestAccess_Rule: root, or a member of the admin group when that group
// exists; nothing else.
func TestAccess_Rule(t *testing.T) {
	const admin = 4242
	for _, tc := range []struct {
		name   string
		c      credentials
		exists bool
		want   bool
	}{
		{"root", credentials{uid: 0}, true, true},
		{"root without the group", credentials{uid: 0}, false, true},
		{"member", credentials{uid: 1000, gids: []uint32{100, admin}}, true, true},
		{"admin gid but the group does not exist", credentials{uid: 1000, gids: []uint32{admin}}, false, false},
		{"non-member", credentials{uid: 1000, gids: []uint32{100}}, true, false},
		{"groups unknown", credentials{uid: 1000}, true, false},
		{"gid 0 is not root", credentials{uid: 1000, gids: []uint32{0}}, true, false},
	} {
		if got := allowed(tc.c, admin, tc.exists); got != tc.want {
			t.Errorf("%s: allowed = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestAccess_UserGroupsFallback: for a bus that does not report groups,
// the user database's view: root's groups include gid 0, and a uid with
// no user is an error (the caller is then denied unless root).
func TestAccess_UserGroupsFallback(t *testing.T) {
	g, err := userGroups(0)
	if err != nil || !slices.Contains(g, 0) {
		t.Fatalf("userGroups(0) = %v, %v; want root's groups with gid 0", g, err)
	}
	if g, err := userGroups(4294967000); err == nil {
		t.Fatalf("userGroups of a uid with no user = %v, want an error", g)
	}
	if _, ok := groupID("nichealth-no-such-group"); ok {
		t.Fatal("a missing admin group resolved")
	}
	if gid, ok := groupID("root"); !ok || gid != 0 {
		t.Fatalf("groupID(root) = %d, %v", gid, ok)
	}
}

// TestAccess_UserGroupsFallback_SupplementaryGroup: the admin group is
// usually a supplementary group (useradd --groups, usermod -aG), so the
// fallback must read every group of the user, not only the primary one.
// The test user of TestMain has its own primary group and
// nichealth-admin as a supplementary one.
func TestAccess_UserGroupsFallback_SupplementaryGroup(t *testing.T) {
	u, err := user.Lookup(fmt.Sprintf("nhadm%d", os.Getpid())) // TestMain's user (main_test.go)
	if err != nil {
		component.Missing(t, "no admin test user (needs root and useradd): the supplementary-group fallback cannot be exercised")
	}
	gid, ok := groupID(DefaultGroup)
	if !ok {
		t.Fatalf("group %s does not exist though the test user is in it", DefaultGroup)
	}
	if u.Gid == strconv.FormatUint(uint64(gid), 10) {
		t.Fatalf("test user's primary group is %s; the test needs it supplementary", DefaultGroup)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	g, err := userGroups(uint32(uid))
	if err != nil {
		t.Fatalf("userGroups(%s): %v", u.Uid, err)
	}
	if !allowed(credentials{uid: uint32(uid), gids: g}, gid, true) {
		t.Fatalf("userGroups(%s) = %v: misses the supplementary admin group %d, so an admin is denied when the bus reports no groups", u.Uid, g, gid)
	}
}
