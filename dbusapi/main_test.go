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

const testAdminUser = "nhadmtest"

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
	createdGroup := false
	if _, err := user.LookupGroup("nichealth-admin"); err != nil {
		if out, err := exec.Command("groupadd", "--system", "nichealth-admin").CombinedOutput(); err != nil {
			// Another test binary may have created it a moment ago.
			if _, err2 := user.LookupGroup("nichealth-admin"); err2 != nil {
				return none, fmt.Sprintf("groupadd nichealth-admin: %v: %s", err, out)
			}
		} else {
			createdGroup = true
		}
	}
	// A user left over by a crashed run is replaced.
	if _, err := user.Lookup(testAdminUser); err == nil {
		_ = exec.Command("userdel", testAdminUser).Run()
	}
	if out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
		"--user-group", "--groups", "nichealth-admin", testAdminUser).CombinedOutput(); err != nil {
		if createdGroup {
			_ = exec.Command("groupdel", "nichealth-admin").Run()
		}
		return none, fmt.Sprintf("useradd: %v: %s", err, out)
	}
	adminUser = testAdminUser
	return func() {
		_ = exec.Command("userdel", testAdminUser).Run()
		if createdGroup {
			_ = exec.Command("groupdel", "nichealth-admin").Run()
		}
	}, ""
}
