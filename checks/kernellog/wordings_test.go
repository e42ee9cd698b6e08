package kernellog

import (
	"regexp"
	"regexp/syntax"
	"testing"

	"github.com/nichealth/nichealthd/config/patterntable"
)

// wording is one line as the kernel prints it (the record's text after
// /dev/kmsg's \xNN escapes are decoded), built from the driver's own
// format string, and the pattern and severity that must claim it ("" for
// a line no pattern may claim).
type wording struct {
	line     string
	pattern  string
	severity patterntable.Severity
	from     string // the format string's place and the kernels that print it
}

const (
	fatal = patterntable.Fatal
	nonf  = patterntable.NonFatal
	info  = patterntable.Informational
)

// defaultWordings holds one real line for every wording of every default
// pattern: mlx5 prints through mlx5_core_err/warn/info and mlx5_log as
// dev_printk ("mlx5_core <bus id>: <func>:<line>:(pid <n>): "), netdev_err
// adds the netdev, ipoib_warn prints the netdev alone, and the kernel core
// prints its own prefixes. config/patterntable/testdata/mlx5-messages.md
// classifies every other message at warning level or above.
var defaultWordings = []wording{
	// Informational lines that claim records so broader patterns do not.
	{"mlx5_core 0000:3b:00.0: mlx5_health_try_recover:359:(pid 812): health recovery succeeded", "fw_health_recovered", info, "health.c mlx5_health_try_recover (info), 5.15-7.2"},
	{"mlx5_core 0000:41:00.0: mlx5_pcie_event:307:(pid 586): PCIe slot advertised sufficient power (75W).", "pci_power_sufficient", info, "events.c mlx5_pcie_event (info), 5.15-7.2"},
	{"mlx5_core 0000:41:00.0: port_module:287:(pid 0): Port module event: module 0, Cable plugged", "module_plugged", info, "events.c port_module (info), 5.15-7.2"},

	// The firmware command interface.
	{"mlx5_core 0000:3b:00.0: cmd_exec:1910:(pid 3911): cmd[3]: QUERY_VPORT_COUNTER(0x770) recovered after timeout", "cmd_completion_recovered", nonf, "cmd.c wait_func_handle_exec_timeout, 5.15-7.2"},
	{"mlx5_core 0000:3b:00.0: cb_timeout_handler:931:(pid 0): cmd[5]: QUERY_VPORT_COUNTER(0x770) Async, recovered after timeout", "cmd_completion_recovered", nonf, "cmd.c cb_timeout_handler, 5.15-7.2"},
	{"mlx5_core 0000:56:00.0: wait_func:1176:(pid 72061): ACCESS_REG(0x805) timeout. Will cause a leak of a command resource", "cmd_exec_timeout", fatal, "cmd.c wait_func, 5.15-7.2"},
	{"mlx5_core 0000:03:00.0: cb_timeout_handler:937:(pid 0): cmd[0]: ENABLE_HCA(0x104) Async, timeout. Will cause a leak of a command resource", "cmd_exec_timeout", fatal, "cmd.c cb_timeout_handler, 5.15-7.2"},
	{"mlx5_core 0000:56:00.0: wait_func_handle_exec_timeout:1146:(pid 72061): cmd[2]: MODIFY_CQ(0x403) No done completion", "cmd_exec_timeout", fatal, "cmd.c wait_func_handle_exec_timeout, 5.15-7.2"},
	{"mlx5_core 0000:56:00.0: mlx5_cmd_comp_handler:1696:(pid 0): Command completion arrived after timeout (entry idx = 2).", "cmd_exec_timeout", fatal, "cmd.c mlx5_cmd_comp_handler, 5.15-7.2"},
	{"mlx5_core 0000:56:00.0: cmd_work_handler:983:(pid 1102): QUERY_HCA_CAP(0x100) timed out while waiting for a slot.", "cmd_interface_stalled", fatal, "cmd.c cmd_work_handler, 6.1-7.2"},
	{"mlx5_core 0000:56:00.0: wait_func:1179:(pid 1102): CREATE_MKEY(0x200) canceled on out of queue timeout.", "cmd_interface_stalled", fatal, "cmd.c wait_func, 5.15-7.2"},
	{"mlx5_core 0000:56:00.0: wait_func:1182:(pid 1102): DESTROY_QP(0x501) timeout while waiting for command semaphore.", "cmd_interface_stalled", fatal, "cmd.c wait_func, 6.1-7.2"},
	{"mlx5_core 0000:56:00.0: mlx5_cmd_invoke:1232:(pid 1102): All CMD slots are stalled, aborting command", "cmd_interface_stalled", fatal, "cmd.c mlx5_cmd_invoke, 7.x"},
	{"mlx5_core 0000:d2:00.0: mlx5_cmd_out_err:838:(pid 268269): ACCESS_REG(0x805) op_mod(0x1) failed, status bad resource(0x5), syndrome (0x305684), err(-22)", "access_reg_failed", nonf, "cmd.c mlx5_cmd_out_err, 5.19-7.2"},
	{"mlx5_core 0000:d2:00.0: mlx5_cmd_check:794:(pid 268269): ACCESS_REG(0x805) op_mod(0x1) failed, status bad resource(0x5), syndrome (0x305684)", "access_reg_failed", nonf, "cmd.c mlx5_cmd_check, 5.15"},

	// Firmware health (health.c) and readiness (main.c, fw_reset.c).
	{"mlx5_core 0000:d2:00.0: poll_health:852:(pid 0): device's health compromised - reached miss count", "fw_health_compromised", fatal, "health.c poll_health, 5.15-7.2"},
	{"mlx5_core 0000:3b:00.0: poll_health:836:(pid 0): Fatal error 1 detected", "fw_fatal_error", fatal, "health.c poll_health, 5.15-7.2"},
	{"mlx5_core 0000:3b:00.0: print_health_info:441:(pid 0): Health issue observed, firmware internal error, severity(2) CRITICAL:", "fw_unrecoverable_error", fatal, "health.c print_health_info, 5.18-7.2"},
	{"mlx5_core 0000:3b:00.0: print_health_info:441:(pid 0): Health issue observed, irisc not responding, severity(2) CRITICAL:", "fw_unrecoverable_error", fatal, "health.c print_health_info, 5.18-7.2"},
	{"mlx5_core 0000:3b:00.0: print_health_info:441:(pid 0): Health issue observed, unrecoverable hardware error, severity(3) ERROR:", "fw_unrecoverable_error", fatal, "health.c print_health_info, 5.18-7.2"},
	{"mlx5_core 0000:3b:00.0: print_health_info:441:(pid 0): Health issue observed, firmware CRC error, severity(3) ERROR:", "fw_unrecoverable_error", fatal, "health.c print_health_info, 5.18-7.2"},
	{"mlx5_core 0000:3b:00.0: print_health_info:441:(pid 0): Health issue observed, ICM fetch PCI error, severity(3) ERROR:", "fw_unrecoverable_error", fatal, "health.c print_health_info, 5.18-7.2"},
	{"mlx5_core 0000:3b:00.0: print_health_info:441:(pid 0): Health issue observed, HW fatal error\n, severity(2) CRITICAL:", "fw_unrecoverable_error", fatal, "health.c print_health_info (hsynd_str's own newline), 5.18-7.2"},
	{"mlx5_core 0000:3b:00.0: print_health_info:441:(pid 0): Health issue observed, ICM fetch PCI data poisoned error, severity(3) ERROR:", "fw_unrecoverable_error", fatal, "health.c print_health_info, 6.12-7.2"},
	{"mlx5_core 0000:3b:00.0: print_health_info:441:(pid 0): Health issue observed, Trust lockdown error, severity(2) CRITICAL:", "fw_unrecoverable_error", fatal, "health.c print_health_info, 7.x"},
	{"mlx5_core 0000:3b:00.0: print_health_info:455:(pid 0): synd 0x7: irisc not responding", "fw_unrecoverable_error", fatal, "health.c print_health_info, 5.15-7.2"},
	{"mlx5_core 0000:3b:00.0: print_health_info:460:(pid 0): Cold reset is required", "fw_unrecoverable_error", fatal, "health.c print_health_info, 7.x"},
	{"mlx5_core 0000:3b:00.0: mlx5_health_try_recover:355:(pid 12): health recovery failed", "fw_health_recovery_failed", fatal, "health.c mlx5_health_try_recover, mlx5_fw_fatal_reporter_err_work, 5.15-7.2"},
	{"mlx5_core 0000:3b:00.0: mlx5_health_try_recover:350:(pid 12): health recovery flow aborted, PCI reads still not working", "fw_health_recovery_failed", fatal, "health.c mlx5_health_try_recover, 5.15-7.2"},
	{"mlx5_core 0000:3b:00.0: mlx5_fw_reset_complete_reload:166:(pid 12): reset reload flow aborted, PCI reads still not working", "fw_health_recovery_failed", fatal, "fw_reset.c mlx5_fw_reset_complete_reload, 5.15-7.2"},
	{"mlx5_core 0000:3b:00.0: mlx5_fw_fatal_reporter_err_work:713:(pid 12): Driver is in error state. Unloading", "fw_health_recovery_failed", fatal, "health.c mlx5_fw_fatal_reporter_err_work, 5.15-7.2"},
	{"mlx5_core 0000:3b:00.0: print_health_info:435:(pid 0): PCI slot is unavailable", "pci_slot_unavailable", fatal, "health.c print_health_info, 5.18-7.2"},
	{"mlx5_core 0000:3b:00.0: mlx5_error_sw_reset:264:(pid 12): PCI channel offline, stop waiting for NIC IFC", "pci_slot_unavailable", fatal, "health.c mlx5_error_sw_reset, 5.15-7.2"},
	{"mlx5_core 0000:3b:00.0: mlx5_health_wait_pci_up:337:(pid 12): PCI channel offline, stop waiting for PCI", "pci_slot_unavailable", fatal, "health.c mlx5_health_wait_pci_up, 5.15-7.2"},
	{"mlx5_core 0000:41:00.0: wait_fw_init:137:(pid 803): Firmware over 120000 MS in initializing state, aborting", "fw_not_responding", fatal, "main.c wait_fw_init, 5.15-6.12"},
	{"mlx5_core 0000:41:00.0: mlx5_function_enable:1117:(pid 803): Firmware over 120000 MS in pre-initializing state, aborting", "fw_not_responding", fatal, "main.c mlx5_function_enable, 5.15-7.2"},
	{"mlx5_core 0000:41:00.0: mlx5_pci_link_toggle:391:(pid 803): Firmware is not responsive (0xffff) after 20000 ms", "fw_not_responding", fatal, "fw_reset.c mlx5_pci_link_toggle, 5.15-7.2"},

	// Probe.
	{"mlx5_core 0000:41:00.0: init_one:1371:(pid 803): mlx5_load_one failed with error code -22", "probe_load_failed", fatal, "main.c init_one, before 5.14"},
	{"mlx5_core 0000:41:00.0: probe_one:2030:(pid 803): mlx5_init_one failed with error code -110", "probe_load_failed", fatal, "main.c probe_one, 5.14-7.2"},
	{"mlx5_core 0000:41:00.0: probe_one:2016:(pid 803): mlx5_pci_init failed with error code -5", "probe_load_failed", fatal, "main.c probe_one, 5.15-7.2"},
	{"mlx5_core: probe of 0000:41:00.0 failed with error -22", "probe_failed", fatal, "drivers/base/dd.c really_probe (pr_warn), before 6.9"},
	{"pci 0000:41:00.0: probe with driver mlx5_core failed with error -110", "probe_failed", fatal, "drivers/base/dd.c call_driver_probe (dev_err), 6.9-7.2"},

	// Slot power and port modules (events.c).
	{"mlx5_core 0000:5c:00.0: port_module:283:(pid 0): Port module event[error]: module 1, Cable error, One or more network ports have been powered down due to insufficient/unadvertised power on the PCIe slot", "pcie_slot_power_ports_down", fatal, "events.c port_module, 5.15-7.2"},
	{"mlx5_core 0000:12:00.0: mlx5_pcie_event:301:(pid 268269): Detected insufficient power on the PCIe slot (27W).", "pci_power_insufficient", nonf, "events.c mlx5_pcie_event, 5.15-7.2"},
	{"mlx5_core 0000:5c:00.0: port_module:283:(pid 0): Port module event[error]: module 0, Cable error, High Temperature", "module_high_temperature", nonf, "events.c port_module, 5.15-7.2"},
	{"mlx5_core 0000:5c:00.0: port_module:283:(pid 0): Port module event[error]: module 0, Cable error, Power budget exceeded", "module_power_budget_exceeded", nonf, "events.c port_module, 5.15-7.2"},
	{"mlx5_core 0000:5c:00.0: port_module:283:(pid 0): Port module event[error]: module 0, Cable error, Bad or shorted cable/module", "module_bad_cable", nonf, "events.c port_module, 5.15-7.2"},
	{"mlx5_core 0000:5c:00.0: port_module:283:(pid 0): Port module event[error]: module 0, Cable error, Bus stuck (I2C or data shorted)", "module_bad_cable", nonf, "events.c port_module, 5.15-7.2"},
	{"mlx5_core 0000:5c:00.0: port_module:283:(pid 0): Port module event[error]: module 0, Cable error, No EEPROM/retry timeout", "module_error", nonf, "events.c port_module, 5.15-7.2"},
	{"mlx5_core 0000:12:00.0: port_module:287:(pid 0): Port module event: module 0, Cable unplugged", "module_unplugged", nonf, "events.c port_module (info), 5.15-7.2"},
	{"mlx5_core 0000:3b:00.0: temp_warn:173:(pid 0): High temperature on sensors with bit set 0 1", "asic_high_temperature", nonf, "events.c temp_warn, 5.15-6.12"},
	{"mlx5_core 0000:3b:00.0: temp_warn:173:(pid 0): High temperature on sensors with bit set 0 0x1.", "asic_high_temperature", nonf, "events.c temp_warn, 7.x"},

	// The Ethernet and IPoIB data path.
	{"mlx5_core 0000:3b:00.0 ens1f0np0: TX timeout detected", "tx_timeout", nonf, "en_main.c mlx5e_tx_timeout, 5.15-7.2"},
	{"mlx5_core 0000:3b:00.0 ens1f0np0: TX timeout on queue: 5, SQ: 0x1234, CQ: 0x4cb, SQ Cons: 0x0 SQ Prod: 0x12, usecs since last trans: 30000000", "tx_timeout", nonf, "en/reporter_tx.c mlx5e_reporter_tx_timeout, 5.15-7.2"},
	{"mlx5_core 0000:3b:00.0 ens1f0np0: mlx5e_safe_reopen_channels failed recovering from a tx_timeout, err(-110).", "tx_timeout", nonf, "en/reporter_tx.c mlx5e_tx_reporter_timeout_recover, 5.15-7.2"},
	{"mlx5_core 0000:3b:00.0 ens1f0np0: RX timeout on channel: 3, ICOSQ: 0x10b RQ: 0x10c, CQ: 0x4d2", "rx_timeout", nonf, "en/reporter_rx.c mlx5e_reporter_rx_timeout, 5.15-7.2"},
	{"mlx5_core 0000:3b:00.0 ens1f0np0: ERR CQE on SQ: 0x1234", "completion_error", nonf, "en/reporter_tx.c, 5.15-7.2"},
	{"mlx5_core 0000:3b:00.0 ens1f0np0: ERR CQE on RQ: 0x10c", "completion_error", nonf, "en/reporter_rx.c, 5.15-7.2"},
	{"mlx5_core 0000:3b:00.0 ens1f0np0: ERR CQE on ICOSQ: 0x10b", "completion_error", nonf, "en/reporter_rx.c, 5.15-7.2"},
	{"ibp60s0: transmit timeout: latency 9560 msecs", "ipoib_tx_timeout", nonf, "ulp/ipoib ipoib_timeout, 5.15-7.2"},
	{"ibp60s0: ipoib_open failed recovering from a tx_timeout, err(-5).", "ipoib_tx_timeout", nonf, "ulp/ipoib ipoib_ib_tx_timeout_work, 6.1-7.2"},
	{"mlx5_core 0000:3b:00.0 ens1f0np0: NETDEV WATCHDOG: CPU: 3: transmit queue 5 timed out 5376 ms", "netdev_watchdog", nonf, "net/sched/sch_generic.c dev_watchdog (netdev_crit), 6.9-7.2"},
	{"NETDEV WATCHDOG: eth0 (mlx5_core): transmit queue 0 timed out 5376 ms", "netdev_watchdog", nonf, "net/sched/sch_generic.c dev_watchdog, 6.1-6.8"},
	{"NETDEV WATCHDOG: eth0 (mlx5_core): transmit queue 0 timed out", "netdev_watchdog", nonf, "net/sched/sch_generic.c dev_watchdog, 5.15"},
	{"watchdog: BUG: soft lockup - CPU#3 stuck for 22s! [kworker/3:1:123]", "napi_soft_lockup", nonf, "kernel/watchdog.c watchdog_timer_fn (arms the pattern; its stack trace is the occurrence)"},
	{"mlx5_core 0000:3b:00.0: print_health_info:441:(pid 0): Health issue observed, High temperature, severity(4) WARNING:", "fw_health_issue", nonf, "health.c print_health_info, 5.18-7.2"},
	{"mlx5_core 0000:3b:00.0: print_health_info:441:(pid 0): Health issue observed, EQ error, severity(3) ERROR:", "fw_health_issue", nonf, "health.c print_health_info, 5.18-7.2"},

	// Lines at warning level or above that no pattern claims (the
	// catalogue says why), and other drivers' lines with the same words.
	{"mlx5_core 0000:3b:00.0: print_health_info:455:(pid 0): synd 0x10: High temperature", "", "", "health.c print_health_info: the Health issue line claims the event"},
	{"mlx5_core 0000:3b:00.0: cmd_work_handler:1000:(pid 1102): failed to allocate command entry", "", "", "cmd.c: host memory, not the NIC"},
	{"mlx5_core 0000:3b:00.0: mlx5_cmd_out_err:838:(pid 1102): CREATE_TIR(0x900) op_mod(0x0) failed, status bad parameter(0x3), syndrome (0x3a2ff5), err(-22)", "", "", "cmd.c: a refused command, the caller's outcome"},
	{"mlx5_core 0000:3b:00.0: mlx5_sync_reset_request_event:507:(pid 0): PCI Sync FW Update Reset Ack. Device reset is expected.", "", "", "fw_reset.c: an operator's firmware activation"},
	{"mlx5_core 0000:3b:00.0: print_health_info:460:(pid 0): crr 0", "", "", "health.c: a health dump detail"},
	{"ixgbe 0000:05:00.0 eth2: NETDEV WATCHDOG: CPU: 3: transmit queue 0 timed out 5000 ms", "", "", "another driver"},
	{"NETDEV WATCHDOG: eth2 (ixgbe): transmit queue 0 timed out", "", "", "another driver"},
	{"bnxt_en 0000:3b:00.0: Detected insufficient power on the PCIe slot (25W).", "", "", "another driver"},
	{"ice: probe of 0000:18:00.0 failed with error -5", "", "", "another driver"},
	{"pci 0000:18:00.0: probe with driver ice failed with error -5", "", "", "another driver"},
	{"i40e 0000:18:00.0: ENABLE_HCA timeout. Will cause a leak of a command resource", "", "", "another driver"},
	{"nvme nvme0: Health issue observed, unrecoverable hardware error", "", "", "another driver"},
	{"nvme nvme3: I/O 1023 QID 12 timeout, aborting", "", "", "another driver"},
	{"mlx5_core 0000:18:00.0: E-Switch: cleanup", "", "", "mlx5 at info level"},
}

// TestKernelLog_11_EveryDefaultWording: every wording of every default
// pattern, as the kernel prints it, is claimed by that pattern with its
// severity; lines no pattern is for are claimed by none.
func TestKernelLog_11_EveryDefaultWording(t *testing.T) {
	c := newCheck(t, false)
	for _, w := range defaultWordings {
		r := rec(w.line)
		p, _ := c.match(&r)
		got, sev := "", patterntable.Severity("")
		if p != nil {
			got, sev = p.Name, p.Severity
		}
		if got != w.pattern || sev != w.severity {
			t.Errorf("%q (%s): claimed by %q (%s), want %q (%s)", w.line, w.from, got, sev, w.pattern, w.severity)
		}
	}
}

// TestKernelLog_11_EveryDefaultWordingIsPinned: taking any one
// alternative out of any default pattern's regex (a wording dropped, as a
// careless edit would) leaves a line of defaultWordings that pattern no
// longer claims, so TestKernelLog_11_EveryDefaultWording fails. A wording
// without a line here is caught by this test instead.
func TestKernelLog_11_EveryDefaultWordingIsPinned(t *testing.T) {
	lines := map[string][]string{}
	for _, w := range defaultWordings {
		if w.pattern != "" {
			lines[w.pattern] = append(lines[w.pattern], w.line)
		}
	}
	ps, err := patterntable.Merge(patterntable.Defaults(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if len(lines[p.Name]) == 0 {
			t.Errorf("%s: no real line in defaultWordings", p.Name)
			continue
		}
		tree, err := syntax.Parse(p.Regex, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		for _, variant := range withoutOneAlternative(tree) {
			re := regexp.MustCompile(variant)
			caught := false
			for _, l := range lines[p.Name] {
				caught = caught || !re.MatchString(l)
			}
			if !caught {
				t.Errorf("%s: without one alternative (%s) every line of defaultWordings still matches: add a line for the wording", p.Name, variant)
			}
		}
	}
}

// withoutOneAlternative returns re written out once per alternative of
// each alternation in it, with that alternative taken out.
func withoutOneAlternative(re *syntax.Regexp) []string {
	var out []string
	var walk func(n *syntax.Regexp)
	walk = func(n *syntax.Regexp) {
		if n.Op == syntax.OpAlternate {
			subs := n.Sub
			for i := range subs {
				n.Sub = append(append([]*syntax.Regexp(nil), subs[:i]...), subs[i+1:]...)
				out = append(out, re.String())
			}
			n.Sub = subs
		}
		for _, s := range n.Sub {
			walk(s)
		}
	}
	walk(re)
	return out
}
