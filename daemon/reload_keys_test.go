package daemon

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

// TestDaemon_ReloadAppliesEveryKeyOrRefuses: keys that used to keep their
// start-up value apply on reload (xmitWaitBytesPerTick, outbox.maxBytes);
// a key that cannot apply live (dbus.enabled) is refused naming it.
func TestDaemon_ReloadAppliesEveryKeyOrRefuses(t *testing.T) {
	h := simtest.Build(t, "minimal")
	dir := t.TempDir()
	cfg := writeConfig(t, h, dir, "[dbus]\nenabled = false\n")
	d, cancel, done := startDaemon(t, cfg, dir)
	defer func() { cancel(); <-done }()
	orig, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(orig), "[dbus]\n", "[counterDetection]\nxmitWaitBytesPerTick = 32.0\n[outbox]\nmaxBytes = 131072\n[dbus]\n", 1)
	edited = strings.Replace(edited, `pollingInterval = "50ms"`, `pollingInterval = "2s"`, 1)
	if err := os.WriteFile(cfg, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.RequestReload(); err != nil {
		t.Fatal(err)
	}
	d.mu.Lock()
	got := d.run.XmitWaitBytesPerTick()
	d.mu.Unlock()
	if got != 32 {
		t.Fatalf("xmitWaitBytesPerTick after reload = %v, want 32", got)
	}
	if s := d.wd.StallAfter(); s != 10*time.Second {
		t.Fatalf("stall threshold after pollingInterval 50ms -> 2s is %v, want 10s", s)
	}

	if err := os.WriteFile(cfg, []byte(strings.Replace(edited, "enabled = false\n", "enabled = true\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	err = d.RequestReload()
	if err == nil || !strings.Contains(err.Error(), "dbus.enabled") || !strings.Contains(err.Error(), "restart") {
		t.Fatalf("reload switching D-Bus on: %v, want a refusal naming dbus.enabled", err)
	}
	d.mu.Lock()
	gen := d.generation
	d.mu.Unlock()
	if gen != 2 {
		t.Fatalf("generation %d after the refusal, want 2", gen)
	}
}
