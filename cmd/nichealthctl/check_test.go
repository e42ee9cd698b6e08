package main

import (
	"fmt"

	healthmodel "github.com/nichealth/nichealthd/checks/health"

	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/dbusapi/dbustest"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sim"
)

// runIn runs nichealthctl in this process and returns stdout, stderr and
// the exit code.
func runIn(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

// simHost builds a simulated node for the sysfs mode of check.
func simHost(t *testing.T, shape string) *sim.Host {
	t.Helper()
	dir, err := sim.MkdirTemp("nichealthctl-check-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	h, err := sim.Build(filepath.Join(dir, "h"), shape)
	if err != nil {
		t.Fatal(err)
	}
	// An ACTIVE IB port knows its subnet manager; some simulator builds
	// write sm_lid 0x0 on every port, which the SM LID check would flag.
	for _, d := range h.Devices() {
		if d.IsVF || d.LinkLayer != topology.LinkLayerInfiniBand {
			continue
		}
		for p := 1; p <= d.Ports; p++ {
			if err := h.WriteRaw(d.Name, p, "sm_lid", "0x1\n"); err != nil {
				t.Fatal(err)
			}
		}
	}
	return h
}

// replace writes a file of the tree by rename: the simulator hard-links
// files of equal content, so writing in place would change all of them.
func replace(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path+".new", []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// emptySysfsConfig points the sysfs mode at a directory with no
// class/infiniband: nothing can be checked there.
func emptySysfsConfig(t *testing.T) string {
	return writeConfig(t, "sysfsRoot = \""+t.TempDir()+"\"\n")
}

// TestCheck_Slides_DaemonOutput proves the slides' plugin output ("IB
// Health Check Output": one line, "dev-netdev:STATE - why ;;" per port,
// Nagios exit codes) from the daemon's D-Bus view of each port.
func TestCheck_Slides_DaemonOutput(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name   string
		mutate func(m *dbusapi.ManagerView, ports []dbusapi.PortView)
		code   int
		line   string   // exact output line when set
		want   []string // substrings otherwise
		absent []string
	}{
		{name: "healthy", code: 0, line: "OK - 3 of 3 ports healthy",
			want: []string{"\nmlx5_0-ibp12s0:OK ;;\nmlx5_1-ibp140s0:OK ;;\nmlx5_bond_0-bond0:OK ;;"}},
		{name: "port down is CRITICAL", mutate: func(_ *dbusapi.ManagerView, p []dbusapi.PortView) {
			p[1].State, p[1].PhysState, p[1].Healthy, p[1].Fatal = "DOWN", "Disabled", false, true
			p[1].Message = "Port mlx5_1 port 1: state DOWN, phys_state Disabled"
		}, code: 2, line: "CRITICAL - 1 of 3 ports fatal: mlx5_1-ibp140s0:CRITICAL - Port mlx5_1 port 1: state DOWN, phys_state Disabled ;;",
			want: []string{"\nmlx5_1-ibp140s0:CRITICAL - Port mlx5_1 port 1: state DOWN, phys_state Disabled ;;\nmlx5_0-ibp12s0:OK ;;\nmlx5_bond_0-bond0:OK ;;"}},
		{name: "degraded port is WARNING", mutate: func(_ *dbusapi.ManagerView, p []dbusapi.PortView) {
			p[0].State, p[0].Healthy = "INIT", false
			p[0].Message = "Port mlx5_0 port 1: state INIT, phys_state LinkUp"
		}, code: 1, want: []string{"mlx5_0-ibp12s0:WARNING - Port mlx5_0 port 1: state INIT, phys_state LinkUp ;;"}},
		{name: "latched non-fatal counter is WARNING", mutate: func(_ *dbusapi.ManagerView, p []dbusapi.PortView) {
			p[0].Counters[1].Breached = true
		}, code: 1, line: "WARNING - 1 of 3 ports degraded: mlx5_0-ibp12s0:WARNING - symbol_error latched ;;"},
		{name: "latched fatal counter is CRITICAL without blaming the link", mutate: func(_ *dbusapi.ManagerView, p []dbusapi.PortView) {
			p[2].Counters[0].Breached, p[2].Healthy, p[2].Fatal = true, false, true
			p[2].Message = "RoCE port mlx5_bond_0 port 1: healthy (ACTIVE, LinkUp)"
		}, code: 2, want: []string{"mlx5_bond_0-bond0:CRITICAL - link_downed latched ;;"}, absent: []string{"healthy (ACTIVE"}},
		{name: "sanity finding is WARNING", mutate: func(_ *dbusapi.ManagerView, p []dbusapi.PortView) {
			p[1].Sanity = []string{"NIC mlx5_1 (0000:8c:00.0) PCIe link runs at 32.0 GT/s x8, capable of 32.0 GT/s x16: reseat the card or check the slot/riser"}
		}, code: 1, want: []string{"mlx5_1-ibp140s0:WARNING - NIC mlx5_1 (0000:8c:00.0) PCIe link runs at 32.0 GT/s x8"}},
		{name: "several reasons on one port, worst wins", mutate: func(_ *dbusapi.ManagerView, p []dbusapi.PortView) {
			p[0].State, p[0].PhysState, p[0].Healthy, p[0].Fatal = "DOWN", "Polling", false, true
			p[0].Message = "Port mlx5_0 port 1: state DOWN, phys_state Polling"
			p[0].Counters[1].Breached = true
			p[0].Sanity = []string{"a | b ;; c"}
		}, code: 2, want: []string{"mlx5_0-ibp12s0:CRITICAL - Port mlx5_0 port 1: state DOWN, phys_state Polling - symbol_error latched - a / b ; c ;;"}},
		{name: "the Nagios line names the suspect part of a port that is not OK", mutate: func(_ *dbusapi.ManagerView, p []dbusapi.PortView) {
			p[0].Counters[1].Breached = true
			p[0].CableDirection, p[0].CableSuspect, p[0].CablePart = "both", "cable", "cable"
			p[2].CableDirection, p[2].CableSuspect, p[2].CablePart = "to-host", "unknown", "unknown part"
		}, code: 1, want: []string{"mlx5_0-ibp12s0:WARNING - symbol_error latched - suspect cable, errors both ;;", "\nmlx5_bond_0-bond0:OK ;;"}},
		{name: "an unknown part leaves the slides' line as it is", mutate: func(_ *dbusapi.ManagerView, p []dbusapi.PortView) {
			p[0].Counters[1].Breached = true
			p[0].CableDirection, p[0].CableSuspect, p[0].CablePart = "to-host", "unknown", "unknown part"
		}, code: 1, want: []string{"mlx5_0-ibp12s0:WARNING - symbol_error latched ;;"}},
		{name: "port not read yet is UNKNOWN", mutate: func(_ *dbusapi.ManagerView, p []dbusapi.PortView) {
			p[2].State, p[2].PhysState = "", ""
		}, code: 3, want: []string{"mlx5_bond_0-bond0:UNKNOWN - Port mlx5_bond_0 port 1: state not read yet ;;"}},
		{name: "CRITICAL beats UNKNOWN", mutate: func(_ *dbusapi.ManagerView, p []dbusapi.PortView) {
			p[2].State, p[2].PhysState = "", ""
			p[1].State, p[1].Healthy, p[1].Fatal = "DOWN", false, true
		}, code: 2, line: "CRITICAL - 1 of 3 ports fatal, 1 unknown: mlx5_1-ibp140s0:CRITICAL ;; mlx5_bond_0-bond0:UNKNOWN - Port mlx5_bond_0 port 1: state not read yet ;;"},
		// A condition no port shows (a NIC function without its RDMA
		// device) is its own entry and counted apart: ports are counted
		// as ports, never "1 of 4 ports".
		{name: "a node condition is not a port", mutate: func(m *dbusapi.ManagerView, _ []dbusapi.PortView) {
			m.Verdict, m.Healthy = "fatal", false
			m.Conditions = []dbusapi.ConditionView{{Check: "InfiniBandStateCheck", Entity: "PCI 0000:3b:00.0", Kind: "nic-function-failed", Fatal: true,
				Message: "NIC function 0000:3b:00.0 is on the PCI bus with no driver bound"}}
		}, code: 2, line: "CRITICAL - 3 of 3 ports healthy; 1 node condition fatal: 0000:3b:00.0:CRITICAL - NIC function 0000:3b:00.0 is on the PCI bus with no driver bound ;;"},
		{name: "port without a netdev", mutate: func(_ *dbusapi.ManagerView, p []dbusapi.PortView) {
			p[0].NetDev = ""
		}, code: 0, want: []string{"\nmlx5_0-p1:OK ;;"}},
		{name: "nothing monitored is UNKNOWN", mutate: func(_ *dbusapi.ManagerView, p []dbusapi.PortView) {
			for i := range p {
				p[i].Device = "" // marks the port for removal below
			}
		}, code: 3, line: "UNKNOWN - no monitored NIC port (no mlx5 device found, or all excluded by nicExclusionRegex or classified as management)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.update(func(m *dbusapi.ManagerView, ports *[]dbusapi.PortView) {
				*m, *ports = dbustest.SampleManager(), dbustest.SamplePorts()
				if c.mutate != nil {
					c.mutate(m, *ports)
				}
				kept := (*ports)[:0]
				for _, p := range *ports {
					if p.Device != "" {
						kept = append(kept, p)
					}
				}
				*ports = kept
			})
			out, errs, code := runIn("check", "--bus-address", f.bus.Address)
			if code != c.code {
				t.Errorf("exit %d, want %d\n%s%s", code, c.code, out, errs)
			}
			if errs != "" {
				t.Errorf("stderr: %q", errs)
			}
			// The plugin guidelines' layout: a summary line, then one line
			// per port (long output).
			first, _, _ := strings.Cut(out, "\n")
			if c.line != "" && first != c.line {
				t.Errorf("first line\n got %q\nwant %q", first, c.line)
			}
			if c.code != 3 || strings.Contains(first, " of ") {
				if n := strings.Count(out, ";;\n"); n < 3 {
					t.Errorf("long output has %d port lines, want every port:\n%s", n, out)
				}
			}
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, a := range c.absent {
				if strings.Contains(out, a) {
					t.Errorf("output has %q:\n%s", a, out)
				}
			}
		})
	}
}

func TestCheck_PerfdataAndJSONFromDaemon(t *testing.T) {
	f := newFixture(t)
	f.update(func(_ *dbusapi.ManagerView, ports *[]dbusapi.PortView) {
		(*ports)[0].Counters[1].Value = 12
		(*ports)[1].Counters[0].Fatal = true
		(*ports)[1].Counters[1].Fatal = true
	})
	out, errs, code := runIn("check", "--perfdata", "--bus-address", f.bus.Address)
	// The summary's perfdata on the first line, the ports' after the
	// long output (the plugin guidelines' second " | ").
	first, rest, _ := strings.Cut(strings.TrimSpace(out), "\n")
	if code != 0 || first != "OK - 3 of 3 ports healthy | ports=3;;;0 fatal_ports=0;;;0;3 degraded_ports=0;;;0;3 unknown_ports=0;;;0;3" {
		t.Fatalf("code %d\n%s%s", code, out, errs)
	}
	long, perf, ok := strings.Cut(rest, " | ")
	if !ok || !strings.HasSuffix(long, "mlx5_bond_0-bond0:OK ;;") {
		t.Fatalf("long output then perfdata expected:\n%s", out)
	}
	perf = strings.ReplaceAll(perf, "\n", " ")
	for _, w := range []string{
		"mlx5_0_1_link_downed=0c;;; ", "mlx5_0_1_symbol_error_rate=0.5;10;;0 ",
		"mlx5_0_1_port_xmit_wait_rate=10;1000000;;0 ", "mlx5_0_1_link_gbps=400;;;0 ",
		"mlx5_1_1_symbol_error_rate=0.5;;10;0 ", "mlx5_bond_0_1_link_gbps=200;;;0",
	} {
		if !strings.Contains(perf+" ", w) {
			t.Errorf("perfdata lacks %q:\n%s", w, perf)
		}
	}
	if strings.Contains(perf, "link_downed_rate") {
		t.Errorf("a delta counter has no rate to graph:\n%s", perf)
	}

	out, _, code = runIn("check", "--json", "--bus-address", f.bus.Address)
	var res struct {
		Status   string `json:"status"`
		ExitCode int    `json:"exitCode"`
		Source   string `json:"source"`
		Output   string `json:"output"`
		Ports    []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"ports"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 0 || res.Status != "OK" || res.ExitCode != 0 ||
		res.Source != "daemon" || len(res.Ports) != 3 || res.Ports[2].Name != "mlx5_bond_0-bond0" || !strings.HasPrefix(res.Output, "OK - 3 of 3 ports healthy\nmlx5_0-ibp12s0:OK ;;") {
		t.Errorf("--json: %v code %d %+v\n%s", err, code, res, out)
	}
}

// Without a daemon the check judges sysfs itself; when that is impossible
// too, the answer is UNKNOWN (exit 3) and says why, on stdout where Nagios
// looks, after saying that the daemon is not running.
func TestCheck_NoDaemonNoSysfsIsUnknown(t *testing.T) {
	bus := dbustest.Start(t, dbustest.Options{})
	cfg := emptySysfsConfig(t)
	state := filepath.Join(t.TempDir(), "state.json")
	for _, c := range []struct {
		name, addr, first, note string
	}{
		{"daemon not running", bus.Address, "UNKNOWN - nichealthd is not running (its state file " + state + " is missing: verdict from sysfs as at a first start); cannot list the RDMA devices: ",
			"nichealthd is not running on the system bus"},
		{"no bus", "unix:path=/nonexistent/bus", "UNKNOWN - nichealthd is not running and the system bus is unreachable (its state file " + state + " is missing",
			"system bus unreachable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errs, code := runIn("check", "--bus-address", c.addr, "--config", cfg, "--state-file", state)
			if code != 3 || !strings.HasPrefix(out, c.first) || strings.Count(out, "\n") != 1 || !strings.Contains(errs, c.note) {
				t.Errorf("code %d\nstdout %q\nstderr %q", code, out, errs)
			}
		})
	}
	out, _, code := runIn("check", "--bus-address", bus.Address, "--config", filepath.Join(t.TempDir(), "missing.toml"), "--state-file", state)
	if code != 3 || !strings.HasPrefix(out, "UNKNOWN - nichealthd is not running; ") || !strings.Contains(out, "missing.toml: cannot read") {
		t.Errorf("missing --config: code %d %q", code, out)
	}
}

// A daemon that has not finished its first poll has nothing to say yet:
// the check judges without it, and says so first.
func TestCheck_DaemonStartingFallsBackToSysfs(t *testing.T) {
	f := newFixture(t)
	f.update(func(m *dbusapi.ManagerView, _ *[]dbusapi.PortView) { m.Ready = false })
	out, errs, code := runIn("check", "--bus-address", f.bus.Address, "--config", emptySysfsConfig(t), "--state-file", filepath.Join(t.TempDir(), "state.json"))
	if code != 3 || !strings.HasPrefix(out, "UNKNOWN - nichealthd is starting (its first poll is not complete)") || !strings.Contains(errs, "has not completed its first poll") {
		t.Errorf("code %d %q %q", code, out, errs)
	}
}

// TestCheck_Slides_SysfsMode runs the plugin without a daemon against
// simulated DGX H100 nodes: the classic check's port, PCIe, rate and SM
// rules, the daemon's roles (the management NIC and the VFs are never
// listed), and the Nagios exit codes.
func TestCheck_Slides_SysfsMode(t *testing.T) {
	cases := []struct {
		name  string
		fault func(t *testing.T, h *sim.Host)
		args  []string
		code  int
		want  []string
	}{
		{name: "healthy node is OK", code: 0, want: []string{
			"OK - 12 of 12 ports healthy\nmlx5_0-ibp25s0:OK ;;\nmlx5_1-ibp42s0:OK ;;\nmlx5_2-ibp59s0:OK ;;\nmlx5_3-ibp92s0:OK ;;\nmlx5_4-ibp155s0:OK ;;\nmlx5_5-ibp172s0:OK ;;\n" +
				"mlx5_6-ibp187s0:OK ;;\nmlx5_7-ibp220s0:OK ;;\nmlx5_8-enp65s0f0np0:OK ;;\nmlx5_9-enp65s0f1np0:OK ;;\nmlx5_10-enp193s0f0np0:OK ;;\nmlx5_11-enp193s0f1np0:OK ;;\n"}},
		{name: "port down is CRITICAL", fault: func(t *testing.T, h *sim.Host) {
			must(t, h.SetPortState("mlx5_1", 1, "DOWN", "Disabled"))
			must(t, h.SetRate("mlx5_1", 1, "10 Gb/sec (4X SDR)"))
			// A port down at the first look is the card's shortfall (seed
			// 7.2 case 3), as the daemon reports it after a fresh start:
			// one condition, the card's.
		}, code: 2, want: []string{"CRITICAL - 1 of 12 ports fatal: mlx5_1-ibp42s0:CRITICAL - Card 0000:2a:00 (Compute) has 0 active ports, expected 1 (peer mode) ;;\n"}},
		{name: "PCIe downtrained is WARNING", fault: func(t *testing.T, h *sim.Host) {
			dev, _ := h.Device("mlx5_3")
			replace(t, filepath.Join(h.SysRoot(), dev.PCIPath, "current_link_width"), "8\n")
		}, code: 1, want: []string{"mlx5_3-ibp92s0:WARNING - NIC mlx5_3 (0000:5c:00.0) PCIe link runs at 32.0 GT/s x8, capable of 32.0 GT/s x16: reseat the card or check the slot/riser ;;"}},
		{name: "rate below peers is WARNING", fault: func(t *testing.T, h *sim.Host) {
			must(t, h.SetRate("mlx5_2", 1, "200 Gb/sec (4X HDR)"))
		}, code: 1, want: []string{"mlx5_2-ibp59s0:WARNING - Port mlx5_2 port 1 runs at 200 Gb/s, its Compute peers at 400 Gb/s"}},
		{name: "no subnet manager is WARNING", fault: func(t *testing.T, h *sim.Host) {
			must(t, h.WriteRaw("mlx5_5", 1, "sm_lid", "0x0\n"))
		}, code: 1, want: []string{"mlx5_5-ibp172s0:WARNING - Port mlx5_5 port 1 is ACTIVE but has no subnet manager (sm_lid 0x0): check the SM ;;"}},
		{name: "RoCE netdev down since first sight is not reported", fault: func(t *testing.T, h *sim.Host) {
			// As a daemon starting on this host says (DESIGN.md difference
			// 4): unhealthy since first sight, on a card that has all its
			// ports active. A daemon that saw it go down says WARNING.
			must(t, h.SetOperstate("enp65s0f0np0", "down"))
		}, code: 0, want: []string{"mlx5_8-enp65s0f0np0:OK ;;"}},
		{name: "RoCE port in INIT is its card's shortfall", fault: func(t *testing.T, h *sim.Host) {
			// A plugin has no history to tell link training from a port
			// stuck there (seed 3.2): the card lacks a port against its
			// peer, as the daemon says once cardAnomalyHold has passed.
			must(t, h.SetPortState("mlx5_9", 1, "INIT", "LinkUp"))
		}, code: 2, want: []string{"mlx5_8-enp65s0f0np0:CRITICAL - Card 0000:41:00 (Storage) has 1 active ports, expected 2 (peer mode) ;;",
			"mlx5_9-enp65s0f1np0:CRITICAL - Card 0000:41:00 (Storage) has 1 active ports, expected 2 (peer mode) ;;"}},
		{name: "unreadable state is UNKNOWN", fault: func(t *testing.T, h *sim.Host) {
			must(t, h.WriteRaw("mlx5_4", 1, "state", "garbage\n"))
		}, code: 3, want: []string{"mlx5_4-ibp155s0:UNKNOWN - Port mlx5_4 port 1: cannot read state/phys_state in "}},
		{name: "management NIC down is not the plugin's business", fault: func(t *testing.T, h *sim.Host) {
			must(t, h.SetPortState("mlx5_12", 1, "DOWN", "Disabled"))
		}, code: 0},
		{name: "sanity switched off in the configuration", fault: func(t *testing.T, h *sim.Host) {
			must(t, h.SetRate("mlx5_2", 1, "200 Gb/sec (4X HDR)"))
		}, args: []string{"--config", "CFG:[linkSanity]\nenabled = false\n"}, code: 0},
		{name: "no GPU topology: every PF checked, and said so", fault: func(t *testing.T, h *sim.Host) {
			must(t, os.Remove(h.MetadataPath()))
		}, args: []string{"--config", "CFG:topologySource = \"metadata\"\n"}, code: 0,
			want: []string{"mlx5_12-enp13s0np0:OK ;;", "ERR:cannot classify NIC roles, so every Mellanox PF is checked (management NICs included)"}},
		{name: "perfdata from sysfs", fault: func(t *testing.T, h *sim.Host) {
			must(t, h.SetCounter("mlx5_0", 1, "counters/symbol_error", 7))
		}, args: []string{"--perfdata"}, code: 0,
			want: []string{" | mlx5_0_1_link_downed=0c;;;\n", "\nmlx5_0_1_symbol_error_rate=0;10;;0\n", "\nmlx5_0_1_link_gbps=400;;;0\n", "\nmlx5_8_1_link_gbps=200;;;0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := simHost(t, "dgx-h100")
			if c.fault != nil {
				c.fault(t, h)
			}
			args := []string{"check", "--root", h.Root}
			for _, a := range c.args {
				if body, ok := strings.CutPrefix(a, "CFG:"); ok {
					a = writeConfig(t, body)
				}
				args = append(args, a)
			}
			out, errs, code := runIn(args...)
			if code != c.code {
				t.Errorf("exit %d, want %d\n%s%s", code, c.code, out, errs)
			}
			if first, _, _ := strings.Cut(out, "\n"); len(first) > 1024 || strings.Contains(out, "mlx5_13") || strings.Contains(out, "mlx5_12") != strings.Contains(c.name, "topology") {
				t.Errorf("want a summary line within 1 KiB and the monitored PFs only:\n%s", out)
			}
			for _, w := range c.want {
				if e, ok := strings.CutPrefix(w, "ERR:"); ok {
					if !strings.Contains(errs, e) {
						t.Errorf("stderr lacks %q:\n%s", e, errs)
					}
				} else if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// The sysfs mode takes its paths from the configuration file, as the
// daemon does; --offline skips a running daemon.
func TestCheck_SysfsModeFromConfig(t *testing.T) {
	h := simHost(t, "minimal")
	f := newFixture(t)
	cfg := writeConfig(t, "sysfsRoot = \""+h.SysRoot()+"\"\nprocfsRoot = \""+h.ProcRoot()+"\"\ndevRoot = \""+h.DevRoot()+
		"\"\nmetadataPath = \""+h.MetadataPath()+"\"\n")
	// In INIT with no subnet manager: the node's one IB port waits for a
	// fabric (DESIGN.md difference 12), as the daemon says after its hold.
	must(t, h.SetPortState("mlx5_0", 1, "INIT", "LinkUp"))
	must(t, h.WriteRaw("mlx5_0", 1, "sm_lid", "0x0\n"))
	out, errs, code := runIn("check", "--offline", "--json", "--config", cfg, "--bus-address", f.bus.Address)
	var res checkResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s%s", err, out, errs)
	}
	dev, _ := h.Device("mlx5_0")
	if code != 1 || res.Source != "sysfs" || len(res.Ports) != 1 || res.Ports[0].Status != nagiosWarning ||
		!strings.HasPrefix(res.Output, "WARNING - 1 of 1 ports degraded: mlx5_0-"+dev.NetDev+":WARNING - No subnet manager on the Compute fabric: all 1 InfiniBand ports of the node (mlx5_0/1) have been in INIT/ARMED with sm_lid 0x0 since ") {
		t.Errorf("code %d %+v\n%s", code, res, errs)
	}
}

func TestCheck_UsageIsUnknown(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"check", "extra"}, 3, "UNKNOWN - nichealthctl check takes no arguments"},
		{[]string{"check", "--bogus"}, 3, "UNKNOWN - invalid command line"},
		{[]string{"check", "--root"}, 3, "UNKNOWN - invalid command line"},
		{[]string{"check", "--help"}, 0, ""},
		{[]string{"check", "--root", "/nonexistent"}, 3, "UNKNOWN - --root /nonexistent is not a directory"},
	} {
		out, errs, code := runIn(c.args...)
		if code != c.code || !strings.HasPrefix(out, c.out) {
			t.Errorf("%v: code %d %q %q", c.args, code, out, errs)
		}
	}
}

// The exit code reaches the monitoring system from the real binary.
func TestCheck_BinaryExitCodes(t *testing.T) {
	f := newFixture(t)
	if out, errs, code := ctl(t, f.bus, nil, "check"); code != 0 || !strings.HasPrefix(out, "OK - 3 of 3 ports healthy\nmlx5_0-ibp12s0:OK ;;") {
		t.Errorf("healthy: code %d %s%s", code, out, errs)
	}
	f.update(func(_ *dbusapi.ManagerView, p *[]dbusapi.PortView) { (*p)[0].Counters[1].Breached = true })
	if out, errs, code := ctl(t, f.bus, nil, "check"); code != 1 || !strings.Contains(out, "WARNING - symbol_error latched") {
		t.Errorf("latched: code %d %s%s", code, out, errs)
	}
	f.update(func(_ *dbusapi.ManagerView, p *[]dbusapi.PortView) {
		(*p)[1].State, (*p)[1].Fatal, (*p)[1].Healthy = "DOWN", true, false
	})
	if out, errs, code := ctl(t, f.bus, nil, "check"); code != 2 || !strings.Contains(out, "CRITICAL") {
		t.Errorf("fatal: code %d %s%s", code, out, errs)
	}
}

func TestCheck_PluginTextAndOrder(t *testing.T) {
	if got := pluginText("a|b\nc ;; d ;;; e"); got != "a/b c ; d ; e" {
		t.Errorf("pluginText = %q", got)
	}
	if got := perfLabel("mlx5_bond_0", "1", "a b=c'd"); got != "mlx5_bond_0_1_a_b_c_d" {
		t.Errorf("perfLabel = %q", got)
	}
	if got := perfNumber(1e-7); strings.ContainsAny(got, "eE") {
		t.Errorf("perfNumber uses an exponent: %q", got)
	}
	order := []nagiosStatus{nagiosOK, nagiosWarning, nagiosUnknown, nagiosCritical}
	for i := range order {
		for j := range order {
			want := order[i]
			if j > i {
				want = order[j]
			}
			if got := worst(order[i], order[j]); got != want {
				t.Errorf("worst(%v, %v) = %v", order[i], order[j], got)
			}
		}
	}
	for _, c := range [][2]string{{"mlx5_2", "mlx5_10"}, {"mlx5_1", "mlx5_bond_0"}, {"ibp3s0", "ibp12s0"}, {"a", "ab"}, {"mlx5_02", "mlx5_3"}} {
		if !naturalLess(c[0], c[1]) || naturalLess(c[1], c[0]) {
			t.Errorf("naturalLess(%q, %q) wrong", c[0], c[1])
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// naturalLess is the device order every view uses.
func naturalLess(a, b string) bool { return healthmodel.CompareDevices(a, b) < 0 }

// TestCheck_PerfdataCongestion: a congestion counter (port_xmit_wait by
// default) gives the share of the port rate lost over the last tick,
// warned at its threshold, so Nagios graphs congestion live.
func TestCheck_PerfdataCongestion(t *testing.T) {
	f := newFixture(t)
	f.update(func(_ *dbusapi.ManagerView, ports *[]dbusapi.PortView) {
		for i := range (*ports)[0].Counters {
			c := &(*ports)[0].Counters[i]
			if c.Name == "port_xmit_wait" {
				c.ThresholdType, c.Threshold, c.LostPercent = "congestion", 10, 12.5
			}
		}
	})
	out, errs, code := runIn("check", "--perfdata", "--bus-address", f.bus.Address)
	if code != 0 || !strings.Contains(out, "\nmlx5_0_1_port_xmit_wait_lost_percent=12.5%;10;;0") || strings.Contains(out, "mlx5_0_1_port_xmit_wait_rate=") {
		t.Fatalf("code %d\n%s%s", code, out, errs)
	}
}

// The Nagios limits at 256 ports (a simulated xxl node, offline): the
// summary line fits NRPE's 1 KiB and names the failing ports first, the
// whole output with perfdata fits Nagios Core's 8 KiB, and what had to be
// left out is said.
func TestCheck_NagiosLimitsAt256Ports(t *testing.T) {
	h := simHost(t, "xxl")
	must(t, h.SetPortState("mlx5_3", 1, "DOWN", "Disabled"))
	must(t, h.SetRate("mlx5_3", 1, "10 Gb/sec (4X SDR)"))
	out, errs, code := runIn("check", "--root", h.Root, "--perfdata")
	first, _, _ := strings.Cut(out, "\n")
	if code != 2 || !strings.HasPrefix(first, "CRITICAL - ") || !strings.Contains(first, " of 256 ports fatal: ") || !strings.Contains(first, "mlx5_3-") {
		t.Fatalf("code %d, first line %q\n%s", code, first, errs)
	}
	if len(first) > 1024 {
		t.Errorf("first line is %d bytes, NRPE before v3 keeps 1024", len(first))
	}
	if len(out) > 8192 {
		t.Errorf("output is %d bytes, Nagios Core keeps 8192", len(out))
	}
	if !strings.Contains(out, "more ports not shown (nichealthctl ports lists them all)") && !strings.Contains(out, "dropped_perfdata=") {
		t.Errorf("nothing says what was left out of %d ports:\n%s", 256, out)
	}
	if !strings.Contains(errs, "left out") {
		t.Errorf("stderr does not say what was left out: %q", errs)
	}
}

// The summary line stays within 1 KiB however many ports fail and however
// long their reasons, naming the worst first and counting the rest.
func TestCheck_SummaryLineBounded(t *testing.T) {
	r := checkResult{}
	long := strings.Repeat("x", 300)
	for i := 0; i < 256; i++ {
		e := checkEntry{Name: fmt.Sprintf("mlx5_%d-ibp%ds0", i, i), Device: fmt.Sprintf("mlx5_%d", i), Port: 1, Reasons: []string{}}
		switch {
		case i == 200:
			e.add(nagiosCritical, "Port mlx5_200 port 1: state DOWN "+long)
		case i%3 == 0:
			e.add(nagiosWarning, "degraded "+long)
		}
		e.Perf = []perfDatum{{Label: fmt.Sprintf("mlx5_%d_1_link_downed", i), Value: "0", UOM: "c"}}
		r.Ports = append(r.Ports, e)
	}
	r.finish(true)
	first, _, _ := strings.Cut(r.Output, "\n")
	if len(first) > 1024 || len(r.Output) > 8192 {
		t.Fatalf("first line %d bytes, output %d bytes", len(first), len(r.Output))
	}
	if !strings.HasPrefix(first, "CRITICAL - 1 of 256 ports fatal, 86 degraded: mlx5_200-ibp200s0:CRITICAL - Port mlx5_200") {
		t.Errorf("first line %q", first)
	}
	if !strings.Contains(first, " more below") || !strings.Contains(first, " | ports=256;;;0 fatal_ports=1;;;0;256 degraded_ports=86;;;0;256") {
		t.Errorf("first line does not count the rest or lacks the summary perfdata: %q", first)
	}
	if r.ExitCode != 2 {
		t.Errorf("exit %d", r.ExitCode)
	}
}

// The summary's words for conditions off the ports, by count and state.
func TestCheck_NodeSummaryCountsConditionsApart(t *testing.T) {
	for _, c := range []struct {
		counts map[nagiosStatus]int
		want   string
	}{
		{nil, ""},
		{map[nagiosStatus]int{nagiosCritical: 1}, "; 1 node condition fatal"},
		{map[nagiosStatus]int{nagiosWarning: 2}, "; 2 node conditions degraded"},
		{map[nagiosStatus]int{nagiosCritical: 1, nagiosWarning: 1}, "; 2 node conditions: 1 fatal, 1 degraded"},
	} {
		if got := nodeSummary(c.counts); got != c.want {
			t.Errorf("%v: %q, want %q", c.counts, got, c.want)
		}
	}
	r := checkResult{Ports: []checkEntry{{Name: "mlx5_0-ib0", Status: nagiosOK}, {Name: "node", Status: nagiosCritical, Node: true, Reasons: []string{"short"}}}}
	r.finish(true)
	first, _, _ := strings.Cut(r.Output, "\n")
	if first != "CRITICAL - 1 of 1 ports healthy; 1 node condition fatal: node:CRITICAL - short ;; | ports=1;;;0 fatal_ports=0;;;0;1 degraded_ports=0;;;0;1 unknown_ports=0;;;0;1 node_conditions=1;;;0" {
		t.Errorf("first line %q", first)
	}
}
