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
	// The rewrite also wakes the config watcher, whose reload may land
	// after the explicit one: a generation that moved across the denied
	// calls is asked again, and a denied call that reloads moves it every
	// time.
	for attempt := 1; ; attempt++ {
		gen := b.waitReady().ConfigGeneration
		for _, method := range []string{"Reload", "RetryRejected"} {
			if _, errOut, err := call(method); err == nil || !strings.Contains(errOut, "nichealth-admin") {
				t.Fatalf("nobody calling %s after the grant was revoked: err %v, stderr %q", method, err, errOut)
			}
		}
		m := b.waitReady()
		if m.ConfigGeneration == gen {
			break
		}
		if attempt == 3 {
			t.Fatalf("a denied reload reloaded: generation %d -> %d, three times in a row", gen, m.ConfigGeneration)
		}
	}
	if out := b.mustBusctl("get-property", dbusapi.BusName, string(dbusapi.RootPath), dbusapi.ManagerIface, "RejectedEvents"); strings.TrimSpace(out) != "u 0" {
		t.Fatalf("RejectedEvents = %q", out)
	}
	b.stop()
}

// TestHostile_ReloadFloodAndDeniedCallsAreQuiet: 1,000 Reload calls by
// root of an unchanged file, and denied calls by a user in a loop, cost a
// handful of log lines with a count, not thousands; counter availability
// is logged only for a device whose counters changed.
func TestHostile_ReloadFloodAndDeniedCallsAreQuiet(t *testing.T) {
	t.Parallel()
	needBusctl(t)
	b := newBusNode(t, "minimal", integConfig{}, dbustest.Options{ExtraPolicies: []string{dbustest.PermissivePolicy}})
	b.start()
	b.waitReady()
	b.waitLog("the first poll", func(l string) bool { return strings.Contains(l, "first poll complete") })
	before := len(strings.Split(b.stderr.String(), "\n"))
	for i := 0; i < 1000; i++ {
		if err := b.cl.Reload(ctxT(t)); err != nil {
			t.Fatalf("reload %d: %v", i, err)
		}
	}
	if m := b.waitReady(); m.ConfigGeneration != 1001 {
		t.Fatalf("generation %d after 1000 reloads, want 1001", m.ConfigGeneration)
	}
	lines := strings.Split(b.stderr.String(), "\n")[before-1:]
	if len(lines) > 20 {
		t.Fatalf("1000 reloads logged %d lines, want a handful:\n%s", len(lines), strings.Join(lines[:40], "\n"))
	}
	t.Logf("1000 reloads: %d log lines", len(lines))
	if c := strings.Count(strings.Join(lines, "\n"), "counter availability"); c != 0 {
		t.Fatalf("%d counter availability lines for reloads that changed nothing", c)
	}
	if os.Getuid() == 0 {
		before = len(strings.Split(b.stderr.String(), "\n"))
		for i := 0; i < 30; i++ {
			if _, errOut, err := b.busctl(true, "call", dbusapi.BusName, string(dbusapi.RootPath), dbusapi.ManagerIface, "Reload"); err == nil {
				t.Fatalf("nobody reloaded: %s", errOut)
			}
		}
		denied := strings.Count(strings.Join(strings.Split(b.stderr.String(), "\n")[before-1:], "\n"), "D-Bus call denied")
		if denied != 1 {
			t.Fatalf("30 denied calls logged %d lines, want 1", denied)
		}
	}
	b.stop()
}
