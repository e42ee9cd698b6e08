package dbusapi_test

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"testing"
)

// adminUser is a throwaway user in group nichealth-admin, created when the
// tests run as root so that the group rule of the policy file and the
// daemon's own group check are tested with a real login. Empty when the
// tests cannot create it.
var adminUser string

// testAdminUser is this test binary's own user: two suites running side
// by side on one machine must not delete each other's (useradd's names
// may be 32 characters; a pid has at most 7 digits).
var testAdminUser = adminTestUserName()

func adminTestUserName() string { return fmt.Sprintf("nhadm%d", os.Getpid()) }

func TestMain(m *testing.M) {
	cleanup, reason := createAdmin()
	if reason != "" {
		fmt.Fprintln(os.Stderr, "admin-group tests will be skipped:", reason)
	}
	code := m.Run()
	cleanup()
	os.Exit(code)
}

func createAdmin() (func(), string) {
	none := func() {}
	if os.Geteuid() != 0 {
		return none, "not running as root (useradd/groupadd need it)"
	}
	if _, err := exec.LookPath("useradd"); err != nil {
		return none, "useradd not installed"
	}
	// The group is created when missing and left in place afterwards:
	// another suite beside this one may have found it and be using it (it
	// is the group the packaged policy names).
	if _, err := user.LookupGroup("nichealth-admin"); err != nil {
		if out, err := exec.Command("groupadd", "--system", "nichealth-admin").CombinedOutput(); err != nil {
			// Another test binary may have created it a moment ago.
			if _, err2 := user.LookupGroup("nichealth-admin"); err2 != nil {
				return none, fmt.Sprintf("groupadd nichealth-admin: %v: %s", err, out)
			}
		}
	}
	// A user left over by a crashed run is replaced.
	if _, err := user.Lookup(testAdminUser); err == nil {
		_ = exec.Command("userdel", testAdminUser).Run()
	}
	if out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
		"--user-group", "--groups", "nichealth-admin", testAdminUser).CombinedOutput(); err != nil {
		return none, fmt.Sprintf("useradd: %v: %s", err, out)
	}
	adminUser = testAdminUser
	return func() { _ = exec.Command("userdel", testAdminUser).Run() }, ""
}
