package kernellog

import (
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config/patterntable"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology/kmsg"
)

var t0 = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

func devices() *Devices {
	return &Devices{
		Monitored: map[string]Function{
			"0000:3b:00.0": {PCI: "0000:3b:00.0", Device: "mlx5_0", Ports: []event.PortRef{{Device: "mlx5_0", Port: 1}}},
			"0000:3c:00.0": {PCI: "0000:3c:00.0", Device: "mlx5_1", Ports: []event.PortRef{{Device: "mlx5_1", Port: 1}}},
		},
		Known: map[string]bool{"0000:3b:00.0": true, "0000:3c:00.0": true, "0000:3b:00.2": true, "0000:d2:00.0": true},
		Names: map[string]string{"mlx5_0": "0000:3b:00.0", "ens1f0np0": "0000:3b:00.0", "mlx5_1": "0000:3c:00.0",
			"ibp60s0": "0000:3c:00.0", "mlx5_9": "0000:d2:00.0", "eno1": "0000:d2:00.0"},
	}
}

func newCheck(t *testing.T, userSpace bool, overrides ...patterntable.Override) *Check {
	t.Helper()
	ps, err := patterntable.Merge(patterntable.Defaults(), overrides)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Compile(ps)
	if err != nil {
		t.Fatal(err)
	}
	return New(tb, Options{MatchUserSpace: userSpace})
}

type recOpt func(*kmsg.Record)

func dict(pci string) recOpt {
	return func(r *kmsg.Record) { r.Subsystem, r.Device = "pci", "+pci:"+pci }
}

func user(r *kmsg.Record) { r.Facility = kmsg.FacilityUser }

func at(d time.Duration) recOpt { return func(r *kmsg.Record) { r.Time = t0.Add(d) } }

var seq uint64

func rec(msg string, opts ...recOpt) kmsg.Record {
	seq++
	r := kmsg.Record{Level: 3, Seq: seq, Message: msg, Time: t0, Flags: '-'}
	for _, o := range opts {
		o(&r)
	}
	return r
}

// TestKernelLog_11_DefaultsClaimTheDriversOwnWords runs lines as mlx5,
// the kernel core and other drivers print them through the default table:
// each mlx5 line is claimed by the right pattern, informational lines
// raise nothing, and other drivers' lines with the same words match
// nothing.
func TestKernelLog_11_DefaultsClaimTheDriversOwnWords(t *testing.T) {
	c := newCheck(t, false)
	for _, tc := range []struct{ line, want string }{
		{"mlx5_core 0000:56:00.0: wait_func:1189:(pid 72061): ACCESS_REG(0x805) timeout. Will cause a leak of a command resource", "cmd_exec_timeout"},
		{"mlx5_core 0000:03:00.0: cmd[0]: ENABLE_HCA(0x104) Async, timeout. Will cause a leak of a command resource", "cmd_exec_timeout"},
		{"mlx5_core 0000:d2:00.0: poll_health:174:(pid 0): device's health compromised - reached miss count", "fw_health_compromised"},
		{"mlx5_core 0000:3b:00.0: poll_health:803:(pid 0): Fatal error 1 detected", "fw_fatal_error"},
		{"mlx5_core 0000:3b:00.0: print_health_info:432:(pid 0): Health issue observed, unrecoverable hardware error, severity(3) ERROR:", "fw_unrecoverable_error"},
		{"mlx5_core 0000:3b:00.0: print_health_info:447:(pid 0): synd 0x8: unrecoverable hardware error", "fw_unrecoverable_error"},
		{"mlx5_core 0000:3b:00.0: print_health_info:432:(pid 0): Health issue observed, High temperature, severity(4) WARNING:", "fw_health_issue"},
		{"mlx5_core 0000:3b:00.0: mlx5_health_try_recover:340:(pid 12): health recovery flow aborted, PCI reads still not working", "fw_health_recovery_failed"},
		{"mlx5_core 0000:3b:00.0: mlx5_health_try_recover:346:(pid 12): health recovery succeeded", "fw_health_recovered"},
		{"mlx5_core 0000:3b:00.0: print_health_info:425:(pid 0): PCI slot is unavailable", "pci_slot_unavailable"},
		{"mlx5_core 0000:41:00.0: init_one:1371:(pid 803): mlx5_load_one failed with error code -22", "probe_load_failed"},
		{"mlx5_core: probe of 0000:41:00.0 failed with error -22", "probe_failed"},
		{"pci 0000:41:00.0: probe with driver mlx5_core failed with error -110", "probe_failed"},
		{"mlx5_core 0000:12:00.0: mlx5_pcie_event:299:(pid 268269): Detected insufficient power on the PCIe slot (27W).", "pci_power_insufficient"},
		{"mlx5_core 0000:41:00.0: mlx5_pcie_event:294:(pid 586): PCIe slot advertised sufficient power (75W).", "pci_power_sufficient"},
		{"mlx5_core 0000:5c:00.0: mlx5_port_module_event:1131:(pid 0): Port module event[error]: module 0, Cable error, High Temperature", "module_high_temperature"},
		{"mlx5_core 0000:5c:00.0: port_module:258:(pid 0): Port module event[error]: module 0, Cable error, Power budget exceeded", "module_power_budget_exceeded"},
		{"mlx5_core 0000:5c:00.0: port_module:258:(pid 0): Port module event[error]: module 0, Cable error, Bad or shorted cable/module", "module_bad_cable"},
		{"mlx5_core 0000:5c:00.0: port_module:258:(pid 0): Port module event[error]: module 0, Cable error, Bus stuck (I2C or data shorted)", "module_bad_cable"},
		{"mlx5_core 0000:5c:00.0: port_module:258:(pid 0): Port module event[error]: module 1, Cable error, One or more network ports have been powered down due to insufficient/unadvertised power on the PCIe slot", "pcie_slot_power_ports_down"},
		{"mlx5_core 0000:5c:00.0: port_module:258:(pid 0): Port module event[error]: module 0, Cable error, No EEPROM/retry timeout", "module_error"},
		{"mlx5_core 0000:12:00.0: port_module:262:(pid 0): Port module event: module 0, Cable unplugged", "module_unplugged"},
		{"mlx5_core 0000:41:00.0: port_module:262:(pid 0): Port module event: module 0, Cable plugged", "module_plugged"},
		{"mlx5_core 0000:3b:00.0: temp_warn:165:(pid 0): High temperature on sensors with bit set 0 0x1.", "asic_high_temperature"},
		{"mlx5_core 0000:3b:00.0 ens1f0np0: TX timeout detected", "tx_timeout"},
		{"mlx5_core 0000:3b:00.0 ens1f0np0: TX timeout on queue: 5, SQ: 0x1234, CQ: 0x4cb, SQ Cons: 0x0 SQ Prod: 0x12, usecs since last trans: 30000000", "tx_timeout"},
		{"mlx5_core 0000:3b:00.0 ens1f0np0: NETDEV WATCHDOG: CPU: 3: transmit queue 5 timed out 5376 ms", "netdev_watchdog"},
		{"NETDEV WATCHDOG: eth0 (mlx5_core): transmit queue 0 timed out", "netdev_watchdog"},
		{"mlx5_core 0000:d2:00.0: mlx5_cmd_out_err:838:(pid 268269): ACCESS_REG(0x805) op_mod(0x1) failed, status bad resource(0x5), syndrome (0x305684), err(-22)", "access_reg_failed"},
		// Other drivers, the same words.
		{"ixgbe 0000:05:00.0 eth2: NETDEV WATCHDOG: CPU: 3: transmit queue 0 timed out 5000 ms", ""},
		{"NETDEV WATCHDOG: eth2 (ixgbe): transmit queue 0 timed out", ""},
		{"bnxt_en 0000:3b:00.0: Detected insufficient power on the PCIe slot (25W).", ""},
		{"ice: probe of 0000:18:00.0 failed with error -5", ""},
		{"pci 0000:18:00.0: probe with driver ice failed with error -5", ""},
		{"i40e 0000:18:00.0: ENABLE_HCA timeout. Will cause a leak of a command resource", ""},
		{"nvme nvme0: Health issue observed, unrecoverable hardware error", ""},
		{"watchdog: BUG: soft lockup - CPU#3 stuck for 22s! [kworker/3:1:123]", "napi_soft_lockup"}, // arms only
		{"mlx5_core 0000:18:00.0: E-Switch: cleanup", ""},
	} {
		r := rec(tc.line)
		p, _ := c.match(&r)
		got := ""
		if p != nil {
			got = p.Name
		}
		if got != tc.want {
			t.Errorf("%q: matched %q, want %q", tc.line, got, tc.want)
		}
	}
}

// TestKernelLog_11_AttributionOrder: the dictionary names the function
// first, then the driver's prefix, then the pattern's group, then a netdev
// or RDMA device name in the text.
func TestKernelLog_11_AttributionOrder(t *testing.T) {
	c := newCheck(t, false)
	d := devices()
	for _, tc := range []struct {
		name string
		r    kmsg.Record
		want string
	}{
		{"dictionary over prefix", rec("mlx5_core 0000:3c:00.0: poll_health:174:(pid 0): device's health compromised", dict("0000:3B:00.0")), "0000:3b:00.0"},
		{"driver prefix", rec("mlx5_core 0000:3c:00.0: poll_health:174:(pid 0): device's health compromised"), "0000:3c:00.0"},
		{"netdev prefix", rec("mlx5_core 0000:3b:00.0 ens1f0np0: TX timeout detected"), "0000:3b:00.0"},
		{"pattern's pci group", rec("mlx5_core: probe of 0000:41:00.0 failed with error -22"), "0000:41:00.0"},
		{"pattern's dev group", rec("NETDEV WATCHDOG: ibp60s0 (mlx5_core): transmit queue 0 timed out"), "0000:3c:00.0"},
		{"RDMA device named in the text", rec("mlx5_core: mlx5_1: device's health compromised"), "0000:3c:00.0"},
		{"nothing named", rec("mlx5_core: INFO: synd 0x8: unrecoverable hardware error"), ""},
	} {
		p, m := c.match(&tc.r)
		if p == nil {
			t.Fatalf("%s: no pattern", tc.name)
		}
		if got := d.attribute(&tc.r, p, m); got != tc.want {
			t.Errorf("%s: attributed to %q, want %q", tc.name, got, tc.want)
		}
	}
}

func judge(t *testing.T, c *Check, mem *Memory, now time.Time, recs ...kmsg.Record) []event.Spec {
	t.Helper()
	specs, _ := c.Judge(mem, recs, devices(), now)
	return specs
}

func only(t *testing.T, specs []event.Spec, kind event.Kind) event.Spec {
	t.Helper()
	if len(specs) != 1 || specs[0].Kind != kind {
		t.Fatalf("want one %s, got %+v", kind, specs)
	}
	return specs[0]
}

const timeoutLine = "mlx5_core 0000:3b:00.0: wait_func:1189:(pid 72061): ACCESS_REG(0x805) timeout. Will cause a leak of a command resource"

// TestKernelLog_11_FatalLatchesUntilAcknowledged: a fatal pattern's
// condition stays for days without a new record; the acknowledgement
// clears it, by "kernel_log" or by the pattern's name, with the pattern's
// error code on the clear.
func TestKernelLog_11_FatalLatchesUntilAcknowledged(t *testing.T) {
	for _, what := range []string{patterntable.AckAll, "cmd_exec_timeout"} {
		c, mem := newCheck(t, false), NewMemory()
		s := only(t, judge(t, c, mem, t0, rec(timeoutLine, dict("0000:3b:00.0"))), event.KindKernelLog)
		if !s.IsFatal || s.CheckName != CheckName || s.ErrorCode[0] != "cmd_exec_timeout" || *s.Action != event.ActionReplaceVM ||
			len(s.Ports) != 1 || s.Ports[0] != (event.PortRef{Device: "mlx5_0", Port: 1}) || s.Metadata["pci"] != "0000:3b:00.0" {
			t.Fatalf("raise %+v", s)
		}
		if specs, _ := c.Tick(mem, t0.Add(30*24*time.Hour)); len(specs) != 0 {
			t.Fatalf("a fatal condition cleared by itself: %+v", specs)
		}
		if specs := c.Acknowledge(mem, "mlx5_1", 1, what, "uid 0"); len(specs) != 0 {
			t.Fatalf("ack of another port cleared %+v", specs)
		}
		cl := only(t, c.Acknowledge(mem, "mlx5_0", 1, what, "uid 0"), event.KindKernelLogCleared)
		if !cl.IsHealthy || cl.ErrorCode[0] != "cmd_exec_timeout" || len(cl.Ports) != 1 || !strings.Contains(cl.Message, "acknowledged by uid 0") {
			t.Fatalf("clear %+v", cl)
		}
		if len(mem.Active) != 0 {
			t.Fatalf("memory after ack: %+v", mem.Active)
		}
	}
}

// TestKernelLog_11_NonFatalClearsAfterItsQuietPeriod: a non-fatal
// condition clears once its quiet period passes without a new record, and
// a new record restarts the period.
func TestKernelLog_11_NonFatalClearsAfterItsQuietPeriod(t *testing.T) {
	c, mem := newCheck(t, false), NewMemory()
	line := "mlx5_core 0000:3b:00.0 ens1f0np0: TX timeout detected"
	s := only(t, judge(t, c, mem, t0, rec(line)), event.KindKernelLog)
	if s.IsFatal || *s.Action != event.ActionNone {
		t.Fatalf("raise %+v", s)
	}
	// Past the 5 min de-duplication window: the second record is
	// reported at once, with its count.
	if s := only(t, judge(t, c, mem, t0.Add(50*time.Minute), rec(line, at(50*time.Minute))), event.KindKernelLog); s.Metadata["count"] != "2" {
		t.Fatalf("second report %+v", s)
	}
	if specs, _ := c.Tick(mem, t0.Add(109*time.Minute)); len(specs) != 0 {
		t.Fatalf("59 min after the second record: %+v", specs)
	}
	cl := only(t, first(c.Tick(mem, t0.Add(110*time.Minute))), event.KindKernelLogCleared)
	if cl.ErrorCode[0] != "tx_timeout" || !strings.Contains(cl.Message, "no new record for 1h0m0s") {
		t.Fatalf("clear %+v", cl)
	}
}

func first(s []event.Spec, _ bool) []event.Spec { return s }

// TestKernelLog_11_StormIsOneConditionWithACount: a storm of one pattern
// on one function is one condition; one event per de-duplication window
// says how many records there were, including those the kernel's rate
// limiter suppressed.
func TestKernelLog_11_StormIsOneConditionWithACount(t *testing.T) {
	// A quiet period longer than the 24 h window, so the condition lives
	// to see its update.
	name, quiet := "access_reg_failed", patterntable.Duration{D: 48 * time.Hour, Set: true}
	c, mem := newCheck(t, false, patterntable.Override{Name: &name, QuietPeriod: quiet}), NewMemory()
	line := "mlx5_core 0000:3b:00.0: mlx5_cmd_out_err:838:(pid 1441871): ACCESS_REG(0x805) op_mod(0x1) failed, status bad resource(0x5), syndrome (0x305684), err(-22)"
	var recs []kmsg.Record
	for i := 0; i < 1000; i++ {
		recs = append(recs, rec(line, at(time.Duration(i)*time.Second)))
	}
	recs = append(recs, rec("mlx5_cmd_out_err: 1243 callbacks suppressed", at(1001*time.Second)))
	only(t, judge(t, c, mem, t0.Add(1001*time.Second), recs...), event.KindKernelLog)
	if len(mem.Active) != 1 {
		t.Fatalf("conditions %+v", mem.Active)
	}
	if specs, _ := c.Tick(mem, t0.Add(2*time.Hour)); len(specs) != 0 {
		t.Fatalf("within the 24 h window: %+v", specs)
	}
	up := only(t, first(c.Tick(mem, t0.Add(25*time.Hour))), event.KindKernelLog)
	if up.Metadata["count"] != "2243" || !strings.Contains(up.Message, "2243 records") {
		t.Fatalf("update %+v", up)
	}
	if st := c.Stats(); st.Matches[MatchKey{"access_reg_failed", "mlx5_0"}] != 2243 || st.Suppressed != 1243 {
		t.Fatalf("stats %+v", st)
	}
}

// TestKernelLog_11_ScopeAndFacility: records about unmonitored functions
// are counted, not raised; a pattern's scope decides whether a record
// naming no monitored NIC raises a node-level condition; records written
// from user space are judged only when asked for.
func TestKernelLog_11_ScopeAndFacility(t *testing.T) {
	for _, tc := range []struct {
		name      string
		r         kmsg.Record
		userSpace bool
		want      string // "" none, else "pci=<addr>" / "node" / "ports"
		stat      func(Stats) uint64
	}{
		{"VF: counted, not raised", rec("mlx5_core 0000:3b:00.2: poll_health:174:(pid 0): device's health compromised"), false, "",
			func(s Stats) uint64 { return s.Unmonitored }},
		{"management NIC: counted, not raised", rec("mlx5_core 0000:d2:00.0: mlx5_cmd_out_err:838:(pid 1): ACCESS_REG(0x805) op_mod(0x1) failed"), false, "",
			func(s Stats) uint64 { return s.Unmonitored }},
		{"failed probe of a function discovery never saw: node-level", rec("mlx5_core 0000:41:00.0: init_one:1371:(pid 803): mlx5_load_one failed with error code -22"), false, "pci=0000:41:00.0", nil},
		{"fatal syndrome naming no function: node-level", rec("mlx5_core: INFO: synd 0x8: unrecoverable hardware error"), false, "node", nil},
		{"non-fatal naming no function (scope nic): counted", rec("NETDEV WATCHDOG: eth9 (mlx5_core): transmit queue 0 timed out"), false, "",
			func(s Stats) uint64 { return s.Unattributed }},
		{"user facility ignored by default", rec(timeoutLine, user), false, "",
			func(s Stats) uint64 { return s.OtherFacility }},
		{"user facility judged when asked", rec(timeoutLine, user), true, "ports", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, mem := newCheck(t, tc.userSpace), NewMemory()
			specs := judge(t, c, mem, t0, tc.r)
			switch {
			case tc.want == "":
				if len(specs) != 0 || tc.stat(c.Stats()) != 1 {
					t.Fatalf("specs %+v stats %+v", specs, c.Stats())
				}
			case tc.want == "ports":
				if s := only(t, specs, event.KindKernelLog); len(s.Ports) != 1 {
					t.Fatalf("raise %+v", s)
				}
			case tc.want == "node":
				s := only(t, specs, event.KindKernelLog)
				ev := event.New(s, event.Stamp{Now: t0})
				if len(s.Ports) != 0 || len(ev.EntitiesImpacted) != 1 || ev.EntitiesImpacted[0] != (event.Entity{Type: event.EntityKernelLog, Value: "fw_unrecoverable_error"}) {
					t.Fatalf("node-level raise %+v", ev)
				}
			default:
				s := only(t, specs, event.KindKernelLog)
				ents := event.New(s, event.Stamp{Now: t0}).EntitiesImpacted
				if len(s.Ports) != 0 || len(ents) != 1 || ents[0] != (event.Entity{Type: event.EntityPCI, Value: strings.TrimPrefix(tc.want, "pci=")}) ||
					s.Metadata["pci"] != strings.TrimPrefix(tc.want, "pci=") {
					t.Fatalf("raise %+v", s)
				}
			}
		})
	}
}

// TestKernelLog_11_PatternRules: N occurrences within T, clear regexes,
// two-record patterns, records read from the ring long after they were
// written.
func TestKernelLog_11_PatternRules(t *testing.T) {
	n, w := 3, patterntable.Duration{D: time.Minute, Set: true}
	name := "tx_timeout"
	t.Run("three within a minute", func(t *testing.T) {
		c, mem := newCheck(t, false, patterntable.Override{Name: &name, Occurrences: &n, Window: w}), NewMemory()
		line := "mlx5_core 0000:3b:00.0 ens1f0np0: TX timeout detected"
		if s := judge(t, c, mem, t0, rec(line), rec(line, at(61*time.Second)), rec(line, at(100*time.Second))); len(s) != 0 {
			t.Fatalf("raised with two inside the window: %+v", s)
		}
		s := only(t, judge(t, c, mem, t0.Add(110*time.Second), rec(line, at(110*time.Second))), event.KindKernelLog)
		if s.Metadata["count"] != "4" {
			t.Fatalf("raise %+v", s)
		}
	})
	t.Run("pending occurrences expire", func(t *testing.T) {
		c, mem := newCheck(t, false, patterntable.Override{Name: &name, Occurrences: &n, Window: w}), NewMemory()
		judge(t, c, mem, t0, rec("mlx5_core 0000:3b:00.0 ens1f0np0: TX timeout detected"))
		if c.Tick(mem, t0.Add(2*time.Minute)); len(mem.Active) != 0 {
			t.Fatalf("pending kept: %+v", mem.Active)
		}
	})
	t.Run("cable plugged back in clears unplugged on the same function only", func(t *testing.T) {
		c, mem := newCheck(t, false), NewMemory()
		judge(t, c, mem, t0, rec("mlx5_core 0000:3b:00.0: port_module:262:(pid 0): Port module event: module 0, Cable unplugged"),
			rec("mlx5_core 0000:3c:00.0: port_module:262:(pid 0): Port module event: module 0, Cable unplugged"))
		cl := only(t, judge(t, c, mem, t0, rec("mlx5_core 0000:3c:00.0: port_module:262:(pid 0): Port module event: module 0, Cable plugged")), event.KindKernelLogCleared)
		if cl.Ports[0].Device != "mlx5_1" || len(mem.Active) != 1 {
			t.Fatalf("clear %+v active %+v", cl, mem.Active)
		}
	})
	t.Run("soft lockup through the mlx5 NAPI poll, two records", func(t *testing.T) {
		c, mem := newCheck(t, false), NewMemory()
		lockup := "watchdog: BUG: soft lockup - CPU#37 stuck for 23s! [ksoftirqd/37:233]"
		if s := judge(t, c, mem, t0, rec(lockup), rec("Modules linked in: mlx5_ib mlx5_core"), rec("CPU: 37 PID: 233 Comm: ksoftirqd/37")); len(s) != 0 {
			t.Fatalf("raised on the first line: %+v", s)
		}
		s := only(t, judge(t, c, mem, t0, rec(" mlx5e_napi_poll+0x122/0x6b0 [mlx5_core]")), event.KindKernelLog)
		if s.Metadata["pattern"] != "napi_soft_lockup" || !strings.Contains(s.Metadata["record"], "stuck for 23s") {
			t.Fatalf("raise %+v", s)
		}
		// Another driver's lockup: the trace never reaches mlx5.
		c2, mem2 := newCheck(t, false), NewMemory()
		var recs []kmsg.Record
		recs = append(recs, rec(lockup))
		for i := 0; i < 64; i++ {
			recs = append(recs, rec(" blk_mq_run_work_fn+0x1/0x2"))
		}
		recs = append(recs, rec(" mlx5e_napi_poll+0x122/0x6b0 [mlx5_core]"))
		if s := judge(t, c2, mem2, t0, recs...); len(s) != 0 {
			t.Fatalf("raised beyond followWithin: %+v", s)
		}
	})
	t.Run("old non-fatal records from the ring raise nothing; fatal ones do", func(t *testing.T) {
		c, mem := newCheck(t, false), NewMemory()
		now := t0.Add(3 * time.Hour)
		if s := judge(t, c, mem, now, rec("mlx5_core 0000:3b:00.0 ens1f0np0: TX timeout detected")); len(s) != 0 {
			t.Fatalf("raised %+v", s)
		}
		only(t, judge(t, c, mem, now, rec(timeoutLine)), event.KindKernelLog)
	})
}

// TestKernelLog_11_ReconcileAfterAReload: a pattern disabled by a reload
// clears its conditions; one made fatal raises them again as fatal.
func TestKernelLog_11_ReconcileAfterAReload(t *testing.T) {
	c, mem := newCheck(t, false), NewMemory()
	judge(t, c, mem, t0, rec("mlx5_core 0000:3b:00.0 ens1f0np0: TX timeout detected"),
		rec("mlx5_core 0000:3b:00.0: port_module:262:(pid 0): Port module event: module 0, Cable unplugged"))
	off, tx, fatal, mod := false, "tx_timeout", "fatal", "module_unplugged"
	ps, _ := patterntable.Merge(patterntable.Defaults(), []patterntable.Override{{Name: &tx, Severity: &fatal}, {Name: &mod, Enabled: &off}})
	tb, _ := Compile(ps)
	c.SetTable(tb, Options{})
	specs := c.Reconcile(mem, t0)
	if len(specs) != 2 || specs[0].Kind != event.KindKernelLogCleared || specs[0].Metadata["pattern"] != "module_unplugged" ||
		specs[1].Kind != event.KindKernelLog || !specs[1].IsFatal {
		t.Fatalf("reconcile %+v", specs)
	}
}

// TestKernelLog_11_ReplayRestoresRaiseClearAndCursor: events the state
// file may have missed are replayed onto the memory, cursor included.
func TestKernelLog_11_ReplayRestoresRaiseClearAndCursor(t *testing.T) {
	c, mem := newCheck(t, false), NewMemory()
	r := rec(timeoutLine)
	r.Seq = 777
	s := only(t, judge(t, c, mem, t0, r), event.KindKernelLog)
	ev := event.New(s, event.Stamp{Now: t0})
	fresh := NewMemory()
	fresh.Replay(&ev)
	a := fresh.Active[Key("cmd_exec_timeout", "0000:3b:00.0")]
	if !fresh.HasSeq || fresh.Seq != 777 || a == nil || !a.Raised || !a.Fatal || a.Count != 1 || len(a.Ports) != 1 || a.Device != "mlx5_0" {
		t.Fatalf("replayed %+v %+v", fresh, a)
	}
	cl := event.New(c.Acknowledge(mem, "mlx5_0", 1, patterntable.AckAll, "uid 0")[0], event.Stamp{Now: t0})
	fresh.Replay(&cl)
	if len(fresh.Active) != 0 {
		t.Fatalf("after the replayed clear: %+v", fresh.Active)
	}
	if d := fresh.Validate(); len(d) != 0 {
		t.Fatal(d)
	}
}

func TestKernelLog_11_ValidateDropsWhatNoCheckWrote(t *testing.T) {
	m := NewMemory()
	m.Active["x|0000:3b:00.0"] = &Active{Pattern: "y", PCI: "0000:3b:00.0"}
	m.Active["ok|nonsense"] = &Active{Pattern: "ok", PCI: "nonsense"}
	m.Active["ok|"] = &Active{Pattern: "ok", Record: strings.Repeat("r", 2000)}
	m.Active["nil|"] = nil
	if d := m.Validate(); len(d) != 3 || len(m.Active) != 1 || len(m.Active["ok|"].Record) != maxRecord {
		t.Fatalf("dropped %v kept %+v", d, m.Active)
	}
}
