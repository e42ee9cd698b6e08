package main

import (
	"os"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/dbusapi/dbustest"
)

// TestHostile_AdminGroupAppliesOnReload: dbus.adminGroup is applied by a
// reload, both ways: granting group nogroup lets user nobody reload and
// retry rejected events, and changing it back revokes that at once, not
// at the next restart. The bus policy is permissive so that the daemon's
// own check is what is tested.
func TestHostile_AdminGroupAppliesOnReload(t *testing.T) {
	t.Parallel()
	needBusctl(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to switch to user nobody")
	}
	// Without a [sinks.connector] table the extra keys land in [dbus].
	grant := integConfig{tables: "adminGroup = \"nogroup\"\n"}
	b := newBusNode(t, "minimal", grant, dbustest.Options{ExtraPolicies: []string{dbustest.PermissivePolicy}})
	b.start()
	b.waitReady()
	call := func(method string) (string, string, error) {
		return b.busctl(true, "call", dbusapi.BusName, string(dbusapi.RootPath), dbusapi.ManagerIface, method)
	}
	if _, errOut, err := call("Reload"); err != nil {
		t.Fatalf("nobody in the admin group cannot reload: %v %s", err, errOut)
	}
	if out, errOut, err := call("RetryRejected"); err != nil || strings.TrimSpace(out) != "u 0" {
		t.Fatalf("nobody in the admin group cannot retry rejected events: %v %q %s", err, out, errOut)
	}
	b.waitManager("generation 2", func(m dbusapi.ManagerView) bool { return m.ConfigGeneration == 2 })

	// Revoke: root reloads a file without the grant.
	b.writeIntegConfig(integConfig{dbus: true})
	b.mustBusctl("call", dbusapi.BusName, string(dbusapi.RootPath), dbusapi.ManagerIface, "Reload")
	b.waitManager("generation 3", func(m dbusapi.ManagerView) bool { return m.ConfigGeneration >= 3 })
	gen := b.waitReady().ConfigGeneration
	for _, method := range []string{"Reload", "RetryRejected"} {
		if _, errOut, err := call(method); err == nil || !strings.Contains(errOut, "nichealth-admin") {
			t.Fatalf("nobody calling %s after the grant was revoked: err %v, stderr %q", method, err, errOut)
		}
	}
	if m := b.waitReady(); m.ConfigGeneration != gen {
		t.Fatalf("a denied reload reloaded: generation %d -> %d", gen, m.ConfigGeneration)
	}
	if out := b.mustBusctl("get-property", dbusapi.BusName, string(dbusapi.RootPath), dbusapi.ManagerIface, "RejectedEvents"); strings.TrimSpace(out) != "u 0" {
		t.Fatalf("RejectedEvents = %q", out)
	}
	b.stop()
}
