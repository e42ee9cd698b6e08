package patterntable

import (
	"time"

	"github.com/nichealth/nichealthd/event"
)

// mlx5 prints through dev_err/mlx5_core_err, so its lines start with the
// driver and the function ("mlx5_core 0000:3b:00.0: "), and netdev_err adds
// the netdev ("mlx5_core 0000:3b:00.0 ens1f0np0: "). Anchoring on the
// driver keeps other drivers' lines with the same words out.
const mlx5 = `^mlx5_core\b`

// Default durations. GPUd de-duplicates its kmsg matches over 5 minutes
// (24 hours for ACCESS_REG, which floods on restricted functions); the
// quiet period of a non-fatal condition is an hour without a new record,
// the span NVSentinel's analyzer counts repeats over.
const (
	defaultDedupe = 5 * time.Minute
	defaultQuiet  = time.Hour
)

// Defaults is the built-in table, in judging order (a record is judged by
// the first enabled pattern it matches, so the informational lines that
// share words with a broader pattern come first). Each row cites where its
// wording comes from: the mlx5 driver sources under
// drivers/net/ethernet/mellanox/mlx5/core/ in Linux (health.c, cmd.c,
// events.c, main.c, en_main.c, en/reporter_tx.c), the kernel core
// (drivers/base/dd.c, net/sched/sch_generic.c, kernel/watchdog.c), and the
// two peers that read the kernel log for NICs: NVSentinel's
// nic-health-monitor syslog detection (docs/nic-health-monitor/
// syslog-detection-correlation.md) and GPUd's InfiniBand kmsg matchers
// (components/accelerator/nvidia/infiniband/kmsg_matcher.go).
func Defaults() []Pattern {
	replace, support, none := event.ActionReplaceVM, event.ActionContactSupport, event.ActionNone
	row := func(p Pattern) Pattern {
		p.Enabled = true
		if p.Dedupe == 0 {
			p.Dedupe = defaultDedupe
		}
		if p.Occurrences == 0 {
			p.Occurrences = 1
		}
		if p.Quiet == 0 {
			p.Quiet = defaultQuiet
		}
		if p.Scope == "" {
			p.Scope = ScopeNIC
		}
		return p
	}
	return []Pattern{
		// health.c mlx5_health_try_recover: "health recovery succeeded".
		row(Pattern{Name: "fw_health_recovered", Regex: mlx5 + `.*health recovery succeeded`, Severity: Informational, Action: none,
			Description: "the driver recovered the device after a firmware health event; a fatal condition raised for it stays until acknowledged",
			Source:      "mlx5 health.c mlx5_health_try_recover"}),
		// events.c mlx5_pcie_event, MLX5_PCI_POWER_SUFFICIENT_REPORTED.
		row(Pattern{Name: "pci_power_sufficient", Regex: mlx5 + `.*PCIe slot advertised sufficient power`, Severity: Informational, Action: none,
			Description: "the slot now advertises enough power for the card", Source: "mlx5 events.c mlx5_pcie_event"}),
		// events.c port_module, MLX5_MODULE_STATUS_PLUGGED.
		row(Pattern{Name: "module_plugged", Regex: mlx5 + `.*Port module event: module \d+, Cable plugged`, Severity: Informational, Action: none,
			Description: "a cable or transceiver was plugged in", Source: "mlx5 events.c port_module"}),

		// cmd.c, what the driver prints when a command's completion came
		// late: the completion interrupt was missed and the driver found it
		// by polling the command EQ ("cmd[%d]: %s(0x%x) recovered after
		// timeout", "... Async, recovered after timeout"). The command
		// completed; a repeat points at interrupts (MSI-X, IRQ affinity).
		row(Pattern{Name: "cmd_completion_recovered", Regex: mlx5 + `.*cmd\[\d+\]: \S+\(0x[0-9a-f]+\) (Async, )?recovered after timeout`,
			Severity: NonFatal, Action: none,
			Description: "the driver missed a firmware command's completion interrupt and found the completion by polling; the command completed. Fix: check the NIC's interrupts (MSI-X vectors, IRQ affinity, irqbalance) and update the firmware if it repeats",
			Source:      "mlx5 cmd.c wait_func_handle_exec_timeout, cb_timeout_handler (5.15 to 7.2)"}),
		// cmd.c wait_func and cb_timeout_handler: "%s(0x%x) timeout. Will
		// cause a leak of a command resource" (and its "cmd[%d]: ... Async,"
		// form); wait_func_handle_exec_timeout's "cmd[%d]: %s(0x%x) No done
		// completion", printed just before it when polling found nothing;
		// mlx5_cmd_comp_handler's "Command completion arrived after timeout
		// (entry idx = %d)." when the firmware answers a command the driver
		// already gave up on (a timeout happened even if its line was lost
		// to the ring). NVSentinel cmd_exec_timeout (fatal, REPLACE_VM);
		// Red Hat solution 6955682.
		row(Pattern{Name: "cmd_exec_timeout",
			Regex:    mlx5 + `.*(timeout\. Will cause a leak of a command resource|cmd\[\d+\]: \S+\(0x[0-9a-f]+\) No done completion|Command completion arrived after timeout)`,
			Severity: Fatal, Action: replace, Scope: ScopeNICOrNode,
			Description: "the NIC firmware did not complete a driver command in time; the driver leaked the command's resources and can no longer manage the device reliably. Fix: reload the driver (or reboot) and update the NIC firmware; replace the card if it recurs",
			Source:      "mlx5 cmd.c wait_func, cb_timeout_handler, wait_func_handle_exec_timeout, mlx5_cmd_comp_handler (5.15 to 7.2); NVSentinel cmd_exec_timeout"}),
		// cmd.c, a command that never reached the firmware because the
		// command interface did not move for the command timeout:
		// cmd_work_handler's "%s(0x%x) timed out while waiting for a
		// slot." (6.1 on), wait_func's "%s(0x%x) canceled on out of queue
		// timeout." and "%s(0x%x) timeout while waiting for command
		// semaphore.", mlx5_cmd_invoke's "All CMD slots are stalled,
		// aborting command" (7.x). Every slot is held by a command the
		// firmware does not finish: the interface is wedged.
		row(Pattern{Name: "cmd_interface_stalled",
			Regex:    mlx5 + `.*(\S+\(0x[0-9a-f]+\) (timed out while waiting for a slot|canceled on out of queue timeout|timeout while waiting for command semaphore)|All CMD slots are stalled, aborting command)`,
			Severity: Fatal, Action: replace, Scope: ScopeNICOrNode,
			Description: "the NIC's firmware command interface stopped moving: commands waited the whole command timeout for a slot the firmware never freed, so the driver can no longer configure or recover the device. Fix: reload the driver (or reboot) and update the NIC firmware; replace the card if it recurs",
			Source:      "mlx5 cmd.c cmd_work_handler, wait_func, mlx5_cmd_invoke (5.15 to 7.2)"}),
		// main.c wait_fw_init / mlx5_function_enable: "Firmware over %u MS
		// in %s state, aborting" (the firmware never left initializing);
		// fw_reset.c mlx5_pci_link_toggle: "Firmware is not responsive
		// (0x%04x) after %llu ms" (after a firmware reset).
		row(Pattern{Name: "fw_not_responding",
			Regex:    mlx5 + `.*(Firmware over \d+ MS in \S+ state, aborting|Firmware is not responsive \(0x[0-9a-f]+\) after \d+ ms)`,
			Severity: Fatal, Action: replace, Scope: ScopeNICOrNode,
			Description: "the NIC firmware did not become ready (at probe, or after a firmware reset), so the function is not usable. Fix: cold-boot the host (power cycle), update the firmware, replace the card if it recurs",
			Source:      "mlx5 main.c wait_fw_init, mlx5_function_enable; fw_reset.c mlx5_pci_link_toggle (5.15 to 7.2)"}),
		// health.c poll_health: the health counter did not move for
		// MAX_MISSES (3) polls; NVSentinel health_poll_failed.
		row(Pattern{Name: "fw_health_compromised", Regex: mlx5 + `.*device's health compromised`,
			Severity: Fatal, Action: replace, Scope: ScopeNICOrNode,
			Description: "the NIC firmware stopped updating its health counter (3 missed polls): the firmware is hung. Fix: reset the device (devlink health recover, driver reload or reboot), update the firmware, replace the card if it recurs",
			Source:      "mlx5 health.c poll_health; NVSentinel health_poll_failed"}),
		// health.c poll_health: a fatal sensor (PCI unreadable, NIC
		// disabled, reset requested): "Fatal error %u detected".
		row(Pattern{Name: "fw_fatal_error", Regex: mlx5 + `.*Fatal error \d+ detected`,
			Severity: Fatal, Action: replace, Scope: ScopeNICOrNode,
			Description: "the driver's health poll found the device in a fatal state (PCI reads failing, NIC interface disabled or firmware reset requested) and put it in its error state. Fix: check the kernel log for the syndrome, reboot, update the firmware, replace the card if it recurs",
			Source:      "mlx5 health.c poll_health"}),
		// health.c print_health_info and hsynd_str: "Health issue observed,
		// %s, severity(%d) %s:" (5.18 on) and "synd 0x%x: %s" (every
		// version) for the unrecoverable syndromes ("HW fatal error" comes
		// with a newline of its own, which /dev/kmsg escapes as \x0a),
		// "Trust lockdown error" (7.x), and "Cold reset is required" when
		// the firmware says only a power cycle brings it back (7.x);
		// NVSentinel unrecoverable_err.
		row(Pattern{Name: "fw_unrecoverable_error",
			Regex:    mlx5 + `.*((Health issue observed, |synd 0x[0-9a-f]+: )(unrecoverable hardware error|HW fatal error|irisc not responding|firmware internal error|firmware CRC error|ICM fetch PCI (data poisoned )?error|Trust lockdown error)|Cold reset is required)`,
			Severity: Fatal, Action: replace, Scope: ScopeNICOrNode,
			Description: "the NIC firmware reported an unrecoverable hardware or firmware syndrome. Fix: drain the node, reboot (a cold reset if the log says \"Cold reset is required\"), update the firmware, replace the card if it recurs",
			Source:      "mlx5 health.c print_health_info/hsynd_str; NVSentinel unrecoverable_err"}),
		// health.c mlx5_health_try_recover and
		// mlx5_fw_fatal_reporter_err_work: "health recovery failed",
		// "health recovery flow aborted, PCI reads still not working",
		// "Driver is in error state. Unloading"; fw_reset.c
		// mlx5_fw_reset_complete_reload: "reset reload flow aborted, PCI
		// reads still not working".
		row(Pattern{Name: "fw_health_recovery_failed", Regex: mlx5 + `.*(health recovery (failed|flow aborted)|reset reload flow aborted|Driver is in error state\. Unloading)`,
			Severity: Fatal, Action: replace, Scope: ScopeNICOrNode,
			Description: "the driver could not recover the device after a firmware health event; the NIC stays unusable. Fix: reboot; replace the card if it recurs",
			Source:      "mlx5 health.c mlx5_health_try_recover"}),
		// health.c print_health_info ("PCI slot is unavailable") and
		// mlx5_error_sw_reset ("PCI channel offline").
		row(Pattern{Name: "pci_slot_unavailable", Regex: mlx5 + `.*(PCI slot is unavailable|PCI channel offline)`,
			Severity: Fatal, Action: replace, Scope: ScopeNICOrNode,
			Description: "the NIC no longer answers on PCIe (reads return all ones). Fix: check the PCIe AER conditions and the riser, reseat or replace the card",
			Source:      "mlx5 health.c print_health_info, mlx5_error_sw_reset"}),
		// main.c init_one/probe_one: "mlx5_load_one failed with error
		// code %d" (mlx5_init_one on newer kernels, mlx5_pci_init first).
		row(Pattern{Name: "probe_load_failed", Regex: mlx5 + `.*(mlx5_load_one|mlx5_init_one|mlx5_pci_init) failed with error code`,
			Severity: Fatal, Action: replace, Scope: ScopeNICOrNode,
			Description: "the driver failed to bring the function up, so it has no RDMA device and its ports are missing. Fix: read the lines before it in the kernel log (firmware, IRQs, PCIe), update the firmware, reboot, replace the card if it recurs",
			Source:      "mlx5 main.c init_one/probe_one"}),
		// drivers/base/dd.c call_driver_probe: "%s: probe of %s failed
		// with error %d" (pr_warn, before 6.9) and "probe with driver %s
		// failed with error %d" (dev_err, since).
		row(Pattern{Name: "probe_failed",
			Regex:    `^mlx5_core: probe of (?P<pci>[0-9a-fA-F]{4,}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]) failed with error|: probe with driver mlx5_core failed with error`,
			Severity: Fatal, Action: replace, Scope: ScopeNICOrNode,
			Description: "the mlx5 driver failed to probe the function, so it has no RDMA device and its ports are missing. Fix: read the driver's lines before it, update the firmware, reboot, replace the card if it recurs",
			Source:      "Linux drivers/base/dd.c call_driver_probe"}),
		// events.c mlx5_pme_error_to_string,
		// MLX5_MODULE_EVENT_ERROR_PCIE_POWER_SLOT_EXCEEDED.
		row(Pattern{Name: "pcie_slot_power_ports_down", Regex: mlx5 + `.*Port module event\[error\]: .*powered down due to insufficient/unadvertised power on the PCIe slot`,
			Severity: Fatal, Action: support,
			Description: "the card powered ports down because the slot does not give it enough power. Fix: move the card to a slot that supplies its rated power, or fix the slot's power advertisement in the BIOS/BMC, then acknowledge",
			Source:      "mlx5 events.c mlx5_pme_error_to_string"}),
		// events.c mlx5_pcie_event, MLX5_PCI_POWER_INSUFFICIENT_REPORTED;
		// GPUd and NVSentinel pci_power_insufficient (non-fatal: often
		// transient while the BMC negotiates power at boot).
		row(Pattern{Name: "pci_power_insufficient", Regex: mlx5 + `.*Detected insufficient power on the PCIe slot`,
			ClearRegex: `PCIe slot advertised sufficient power`,
			Severity:   NonFatal, Action: none, Quiet: 24 * time.Hour,
			Description: "the slot advertises less power than the card needs; the card may throttle or power ports down. Fix: check the slot's power budget in the BIOS/BMC or move the card; clears when the slot advertises sufficient power or after a quiet day",
			Source:      "mlx5 events.c mlx5_pcie_event; GPUd pci_power_insufficient; NVSentinel pci_power_insufficient"}),
		// events.c port_module, MLX5_MODULE_EVENT_ERROR_HIGH_TEMPERATURE;
		// GPUd port_module_high_temperature, NVSentinel port_module_high_temp.
		row(Pattern{Name: "module_high_temperature", Regex: mlx5 + `.*Port module event\[error\]: module \d+, .*High Temperature`,
			Severity: NonFatal, Action: none,
			Description: "a transceiver reported high temperature; the link may shut down. Fix: check the airflow and fans near the port, reseat or replace the transceiver",
			Source:      "mlx5 events.c port_module; GPUd port_module_high_temperature; NVSentinel port_module_high_temp"}),
		// events.c MLX5_MODULE_EVENT_ERROR_POWER_BUDGET_EXCEEDED.
		row(Pattern{Name: "module_power_budget_exceeded", Regex: mlx5 + `.*Port module event\[error\]: .*Power budget exceeded`,
			Severity: NonFatal, Action: none,
			Description: "the transceiver needs more power than the port may give it, so it is not powered. Fix: use a transceiver within the card's power class",
			Source:      "mlx5 events.c mlx5_pme_error_to_string"}),
		// events.c MLX5_MODULE_EVENT_ERROR_BAD_CABLE and _BUS_STUCK.
		row(Pattern{Name: "module_bad_cable", Regex: mlx5 + `.*Port module event\[error\]: .*(Bad or shorted cable/module|Bus stuck \(I2C or data shorted\))`,
			Severity: NonFatal, Action: none,
			Description: "the cable or transceiver is bad or shorted. Fix: replace the cable or transceiver",
			Source:      "mlx5 events.c mlx5_pme_error_to_string"}),
		// events.c port_module, every other module error (no EEPROM,
		// unknown identifier, part number not allowed, long range).
		row(Pattern{Name: "module_error", Regex: mlx5 + `.*Port module event\[error\]: `,
			Severity: NonFatal, Action: none,
			Description: "the transceiver reported an error (no EEPROM, unknown identifier, part number not allowed, long range on a non-NVIDIA cable). Fix: use a supported cable or transceiver",
			Source:      "mlx5 events.c port_module"}),
		// events.c port_module, MLX5_MODULE_STATUS_UNPLUGGED; NVSentinel
		// module_unplugged.
		row(Pattern{Name: "module_unplugged", Regex: mlx5 + `.*Port module event: module \d+, Cable unplugged`,
			ClearRegex: `Port module event: module \d+, Cable plugged`,
			Severity:   NonFatal, Action: none,
			Description: "a cable or transceiver was unplugged (the port's link is down). Fix: plug it back in; clears when it is plugged in or after a quiet hour",
			Source:      "mlx5 events.c port_module; NVSentinel module_unplugged"}),
		// events.c temp_warn: "High temperature on sensors with bit set".
		row(Pattern{Name: "asic_high_temperature", Regex: mlx5 + `.*High temperature on sensors with bit set`,
			Severity: NonFatal, Action: none,
			Description: "the NIC's ASIC is overheating; it may throttle or shut down. Fix: check the airflow and fans over the card",
			Source:      "mlx5 events.c temp_warn"}),
		// en_main.c mlx5e_tx_timeout ("TX timeout detected"),
		// en/reporter_tx.c mlx5e_reporter_tx_timeout ("TX timeout on queue:
		// %d, SQ: ...", printed by en/health.c mlx5e_health_report) and
		// mlx5e_tx_reporter_timeout_recover when the recovery failed
		// ("mlx5e_safe_reopen_channels failed recovering from a
		// tx_timeout, err(%d)."), all through netdev_err.
		row(Pattern{Name: "tx_timeout", Regex: mlx5 + ` \S+ \S+: (TX timeout detected|TX timeout on queue: \d+|mlx5e_safe_reopen_channels failed recovering from a tx_timeout)`,
			Severity: NonFatal, Action: none,
			Description: "a transmit queue stopped making progress and the driver is recovering it (devlink health tx reporter). Fix: check the link and the peer; a recurring timeout needs a firmware update or a card replacement",
			Source:      "mlx5 en_main.c mlx5e_tx_timeout, en/reporter_tx.c (5.15 to 7.2)"}),
		// en/reporter_rx.c mlx5e_reporter_rx_timeout: "RX timeout on
		// channel: %d, %s RQ: 0x%x, CQ: 0x%x" (printed by
		// mlx5e_health_report).
		row(Pattern{Name: "rx_timeout", Regex: mlx5 + ` \S+ \S+: RX timeout on channel: \d+`,
			Severity: NonFatal, Action: none,
			Description: "a receive queue stopped getting completions and the driver is recovering it (devlink health rx reporter). Fix: check the NIC's interrupts and the firmware; a recurring timeout needs a firmware update or a card replacement",
			Source:      "mlx5 en/reporter_rx.c mlx5e_reporter_rx_timeout (5.15 to 7.2)"}),
		// en/reporter_tx.c and en/reporter_rx.c: "ERR CQE on SQ: 0x%x",
		// "ERR CQE on RQ: 0x%x", "ERR CQE on ICOSQ: 0x%x" (printed by
		// mlx5e_health_report): a completion with an error status, after
		// which the driver resets the queue.
		row(Pattern{Name: "completion_error", Regex: mlx5 + ` \S+ \S+: ERR CQE on (SQ|RQ|ICOSQ): 0x[0-9a-f]+`,
			Severity: NonFatal, Action: none,
			Description: "the NIC completed work with an error status and the driver reset the queue (devlink health tx/rx reporter). Fix: read the devlink health report (devlink health show); recurring ones need a firmware update or a card replacement",
			Source:      "mlx5 en/reporter_tx.c, en/reporter_rx.c (5.15 to 7.2)"}),
		// drivers/infiniband/ulp/ipoib/ipoib_main.c ipoib_timeout:
		// "transmit timeout: latency %d msecs" and ipoib_ib_tx_timeout_work
		// "ipoib_open failed recovering from a tx_timeout, err(%d).",
		// through ipoib_warn, whose prefix is the netdev's name alone (an
		// mlx5 IPoIB netdev has no transmit-timeout handler of its own).
		row(Pattern{Name: "ipoib_tx_timeout", Regex: `^(?P<dev>[^\s:]+): (transmit timeout: latency \d+ msecs|ipoib_open failed recovering from a tx_timeout)`,
			Severity: NonFatal, Action: none,
			Description: "an IPoIB interface's transmit queue stalled and the IPoIB driver reset it. Fix: check the port's link and the subnet manager; a recurring stall needs a firmware update or a card replacement",
			Source:      "Linux drivers/infiniband/ulp/ipoib/ipoib_main.c ipoib_timeout (5.15 to 7.2)"}),
		// net/sched/sch_generic.c dev_watchdog: "NETDEV WATCHDOG: %s (%s):
		// transmit queue %u timed out" (through netdev_crit with the
		// driver prefix on newer kernels); NVSentinel netdev_watchdog.
		row(Pattern{Name: "netdev_watchdog",
			Regex:    mlx5 + ` \S+ \S+: NETDEV WATCHDOG: |NETDEV WATCHDOG: (?P<dev>\S+) \(mlx5_core\): transmit queue \d+ timed out`,
			Severity: NonFatal, Action: none,
			Description: "the kernel's transmit watchdog found a queue stalled and reset it. Fix: check the link and the peer; a recurring stall needs a firmware update or a card replacement",
			Source:      "Linux net/sched/sch_generic.c dev_watchdog; NVSentinel netdev_watchdog"}),
		// kernel/watchdog.c watchdog_timer_fn: "BUG: soft lockup - CPU#%d
		// stuck for %us!", whose stack trace (the following records) runs
		// through the mlx5e NAPI poll: a CPU spent 20 s and more in the
		// driver's receive/transmit completion handling.
		row(Pattern{Name: "napi_soft_lockup", Regex: `soft lockup - CPU#\d+ stuck for \d+s!`,
			FollowedBy: `\bmlx5e_napi_poll\b|\bmlx5e_poll_(rx|tx)_cq\b|\bmlx5_eq_comp_int\b`, FollowWithin: 64,
			Severity: NonFatal, Action: support, Scope: ScopeNode,
			Description: "a CPU was stuck for 20 s or more in the mlx5 NAPI poll (receive/transmit completions): traffic on that NIC stalled meanwhile. Fix: update the driver and firmware; check interrupt affinity and a receive storm",
			Source:      "Linux kernel/watchdog.c; mlx5 en_txrx.c mlx5e_napi_poll"}),
		// health.c print_health_info for every other syndrome (high
		// temperature, EQ errors, ...).
		row(Pattern{Name: "fw_health_issue", Regex: mlx5 + `.*Health issue observed, `,
			Severity: NonFatal, Action: none,
			Description: "the NIC firmware reported a health syndrome that is not unrecoverable by itself. Fix: read the syndrome in the kernel log, update the firmware, check cooling for a temperature syndrome",
			Source:      "mlx5 health.c print_health_info"}),
		// cmd.c mlx5_cmd_out_err: "%s(0x%x) op_mod(0x%x) failed, status
		// %s(0x%x), syndrome (0x%x), err(%d)" (5.19 on; mlx5_cmd_check
		// before, without err) for ACCESS_REG (0x805); GPUd
		// access_reg_failed (issue 1164: restricted PFs flood it on every
		// counter read) de-duplicated over 24 h; NVSentinel non-fatal.
		row(Pattern{Name: "access_reg_failed", Regex: `mlx5_cmd_(out_err|check):\d+:\(pid \d+\): ACCESS_REG\(0x805\) .*failed`,
			Severity: NonFatal, Action: none, Dedupe: 24 * time.Hour,
			Description: "the firmware refused a register access; on restricted functions (DGX, GB200 internal ports) every read of their counters does this. Fix: exclude the restricted function (nicExclusionRegex) so it is not read; elsewhere update the firmware",
			Source:      "mlx5 cmd.c mlx5_cmd_out_err; GPUd access_reg_failed; NVSentinel access_reg_failed"}),
	}
}
