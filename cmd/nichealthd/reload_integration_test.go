package main

// End-to-end tests of live reload (DESIGN.md section 6): the daemon watches
// its configuration's directory, so every way an operator or an orchestrator
// replaces the file is seen; a valid change applies without a restart and
// keeps windows and latches, an invalid one is refused and the running
// configuration stays.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/dbusapi/dbustest"
	"github.com/nichealth/nichealthd/event"
)

// symbolErrorTable overrides the symbol_error threshold (counter seed
// section 10.2 default: 10 per second).
func symbolErrorTable(threshold string) string {
	return fmt.Sprintf("[[counterDetection.counters]]\nname = \"symbol_error\"\nthreshold = %s\n", threshold)
}

// configMap lays the configuration out as the kubelet does for a mounted
// ConfigMap: config.toml -> ..data/config.toml, ..data -> a timestamped
// directory, so an update is one atomic rename of ..data.
type configMap struct {
	dir string
	gen int
}

func newConfigMap(t *testing.T, dir, content string) *configMap {
	t.Helper()
	c := &configMap{dir: dir}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ts := c.writeVersion(t, content)
	if err := os.Symlink(ts, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..data", "config.toml"), filepath.Join(dir, "config.toml")); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *configMap) writeVersion(t *testing.T, content string) string {
	t.Helper()
	c.gen++
	ts := fmt.Sprintf("..2026_01_01_00_00_%02d.%09d", c.gen, c.gen)
	if err := os.Mkdir(filepath.Join(c.dir, ts), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.dir, ts, "config.toml"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return ts
}

// update is the kubelet's atomic writer: new timestamped directory, a
// temporary ..data_tmp symlink to it (ln -sfn), renamed over ..data, then
// the old directory removed.
func (c *configMap) update(t *testing.T, content string) {
	t.Helper()
	old, err := os.Readlink(filepath.Join(c.dir, "..data"))
	if err != nil {
		t.Fatal(err)
	}
	ts := c.writeVersion(t, content)
	tmp := filepath.Join(c.dir, "..data_tmp")
	if out, err := exec.Command("ln", "-sfn", ts, tmp).CombinedOutput(); err != nil {
		t.Fatalf("ln -sfn: %v %s", err, out)
	}
	if err := os.Rename(tmp, filepath.Join(c.dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(c.dir, old)); err != nil {
		t.Fatal(err)
	}
}

// editStyle replaces the configuration file's content the way one tool
// does. from is the current content.
type editStyle struct {
	name string
	edit func(t *testing.T, path, from, to string)
}

var editStyles = []editStyle{
	{"RenameOver", func(t *testing.T, path, _, to string) {
		tmp := path + ".new"
		if err := os.WriteFile(tmp, []byte(to), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}},
	// vim with its defaults (writebackup, backupcopy=auto choosing "no"
	// for a plain file): swap file while editing, a probe file to test the
	// directory, the original renamed to the backup, a new file written,
	// the backup deleted, the swap file deleted on quit.
	{"Vim", func(t *testing.T, path, _, to string) {
		dir, base := filepath.Dir(path), filepath.Base(path)
		swp := filepath.Join(dir, "."+base+".swp")
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
		}
		must(os.WriteFile(swp, []byte("b0VIM 9.1"), 0o600))
		probe := filepath.Join(dir, "4913")
		must(os.WriteFile(probe, nil, 0o644))
		must(os.Remove(probe))
		backup := path + "~"
		must(os.Rename(path, backup))
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		must(err)
		for _, line := range strings.SplitAfter(to, "\n") {
			_, err := f.WriteString(line)
			must(err)
		}
		must(f.Sync())
		must(f.Close())
		must(os.Remove(backup))
		must(os.Remove(swp))
	}},
	{"SedInPlace", func(t *testing.T, path, from, to string) {
		// Only the threshold line differs; let the real sed -i do it.
		var old, repl string
		fl, tl := strings.Split(from, "\n"), strings.Split(to, "\n")
		for i := range fl {
			if i < len(tl) && fl[i] != tl[i] {
				old, repl = fl[i], tl[i]
			}
		}
		if old == "" || len(fl) != len(tl) {
			t.Fatalf("sed style needs a one-line change")
		}
		out, err := exec.Command("sed", "-i", "s/^"+old+"$/"+repl+"/", path).CombinedOutput()
		if err != nil {
			t.Fatalf("sed -i: %v %s", err, out)
		}
		if b, _ := os.ReadFile(path); string(b) != to {
			t.Fatalf("sed -i produced %q", b)
		}
	}},
}

// TestIntegration_Reload_EditingStyles: each way of replacing the file is
// applied twice in a row (a watch on the file itself would see only the
// first), the new threshold shows on D-Bus and ConfigGeneration counts.
func TestIntegration_Reload_EditingStyles(t *testing.T) {
	t.Parallel()
	styles := append(editStyles[:len(editStyles):len(editStyles)], editStyle{name: "ConfigMapSymlinkSwap"})
	for _, st := range styles {
		t.Run(st.name, func(t *testing.T) {
			b := newBusNode(t, "minimal", integConfig{tables: symbolErrorTable("10.0")}, dbustest.Options{})
			content := func(th string) string {
				return b.configText(integConfig{dbus: true, tables: symbolErrorTable(th)})
			}
			var cm *configMap
			if st.edit == nil {
				cm = newConfigMap(t, filepath.Join(b.dir, "configmap"), content("10.0"))
				b.cfg = filepath.Join(cm.dir, "config.toml")
			}
			b.start()
			b.waitReady()
			cur := "10.0"
			for i, th := range []string{"1000.0", "250.0"} {
				if cm != nil {
					cm.update(t, content(th))
				} else {
					st.edit(t, b.cfg, content(cur), content(th))
				}
				cur = th
				gen := uint64(i + 2)
				m := b.waitManager(fmt.Sprintf("generation %d", gen), func(m dbusapi.ManagerView) bool { return m.ConfigGeneration >= gen })
				if m.ConfigGeneration != gen || m.LastReloadError != "" {
					t.Fatalf("edit %d: manager %+v", i+1, m)
				}
				b.waitPort("mlx5_0", 1, "threshold "+th, func(p dbusapi.PortView) bool {
					for _, c := range p.Counters {
						if c.Name == "symbol_error" {
							return fmt.Sprintf("%.1f", c.Threshold) == th
						}
					}
					return false
				})
				if b.logGeneration() != int(gen) {
					t.Fatalf("edit %d: log generation %d:\n%s", i+1, b.logGeneration(), b.stderr.Tail())
				}
			}
			// An editor's save is never a half-written file to the daemon.
			if strings.Contains(b.stderr.String(), "configuration refused") {
				t.Fatalf("a transient state of the edit was read:\n%s", b.stderr.Tail())
			}
			b.stop()
		})
	}
}

// injectSteady adds step to a counter every half second, times times: a
// steady 2*step per second, whatever the velocity window sees (a window
// of at least 1 s and at most ~1.5 s holds at most three steps).
func injectSteady(n *node, dev, rel string, step uint64, times int, stop func() bool) {
	n.t.Helper()
	for i := 0; i < times; i++ {
		if err := n.h.AddCounter(dev, 1, rel, step); err != nil {
			n.t.Fatal(err)
		}
		if stop != nil && stop() {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func readCounter(n *node, dev, rel string) uint64 {
	n.t.Helper()
	p, err := n.h.PortPath(dev, 1, rel)
	if err != nil {
		n.t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		n.t.Fatal(err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		n.t.Fatal(err)
	}
	return v
}

func symbolBreach(dev string) func(e event.Event) bool {
	return func(e event.Event) bool {
		return e.Device() == dev && e.Kind == event.KindCounterBreach && e.Metadata["counter"] == "symbol_error"
	}
}

// TestIntegration_Reload_ThresholdDisableAndRefusal: a changed threshold
// applies (500/s breaches the default 10/s, not a reloaded 1000/s); a
// counter disabled while latched is cleared with a recovery that says why;
// an invalid file is refused and monitoring goes on with the old one.
func TestIntegration_Reload_ThresholdDisableAndRefusal(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "")
	n.writeIntegConfig(integConfig{})
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))

	// Before: 500/s against the default 10/s.
	injectSteady(n, "mlx5_1", "counters/symbol_error", 250, 20, func() bool {
		return count(n.read(), symbolBreach("mlx5_1")) > 0
	})
	n.waitEvent("symbol_error breach at 500/s", symbolBreach("mlx5_1"))

	// Reload: threshold 1000/s.
	rename := editStyles[0].edit
	rename(t, n.cfg, "", n.configText(integConfig{tables: symbolErrorTable("1000.0")}))
	n.waitLog("generation 2", func(string) bool { return n.logGeneration() == 2 })
	before := len(n.read())
	start := readCounter(n, "mlx5_2", "counters/symbol_error")
	injectSteady(n, "mlx5_2", "counters/symbol_error", 250, 6, nil)
	// Then a burst far above 1000/s: the first breach must be this one.
	if err := n.h.AddCounter("mlx5_2", 1, "counters/symbol_error", 5000); err != nil {
		t.Fatal(err)
	}
	e := n.waitEventAfter(before, "breach of the reloaded threshold", symbolBreach("mlx5_2"))
	if e.Metadata["threshold"] != "1000" || e.Metadata["value"] != strconv.FormatUint(start+6500, 10) {
		t.Fatalf("first breach after the reload is not the burst: %+v", e)
	}

	// Disable symbol_error while mlx5_1 and mlx5_2 have it latched.
	before = len(n.read())
	rename(t, n.cfg, "", n.configText(integConfig{tables: symbolErrorTable("1000.0") + "enabled = false\n"}))
	n.waitLog("generation 3", func(string) bool { return n.logGeneration() == 3 })
	for _, dev := range []string{"mlx5_1", "mlx5_2"} {
		r := n.waitEventAfter(before, "recovery of disabled "+dev, func(e event.Event) bool {
			return e.Device() == dev && e.Kind == event.KindCounterRecovered && e.Metadata["counter"] == "symbol_error"
		})
		if !strings.Contains(r.Message, "disabled by configuration") || !r.IsHealthy {
			t.Fatalf("recovery does not say why: %+v", r)
		}
	}

	// An invalid file is refused; the running configuration stays.
	good, _ := os.ReadFile(n.cfg)
	rename(t, n.cfg, "", strings.Replace(string(good), "enabled = false", "enabled = \"no\"", 1))
	n.waitLog("the refusal", func(l string) bool { return strings.Contains(l, "configuration refused") })
	if err := n.h.SetPortState("mlx5_5", 1, "DOWN", "Disabled"); err != nil {
		t.Fatal(err)
	}
	n.waitEvent("fault detected after a refused reload", portEvent("mlx5_5", event.KindPortFatal))
	if g := n.logGeneration(); g != 3 {
		t.Fatalf("generation %d after a refused reload", g)
	}
	n.stop()
	if c := count(n.read()[before:], func(e event.Event) bool {
		return e.Metadata["counter"] == "symbol_error" && e.Kind == event.KindCounterBreach
	}); c != 0 {
		t.Fatalf("disabled counter reported: %s", summary(n.read()[before:]))
	}
}
