package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/component"
	"github.com/nichealth/nichealthd/topology/kmsg"
)

// nicRecord is a kernel-facility record the mlx5 driver prints for nic
// (dev_err: the dictionary names its PCI function); %s in msg is that
// function's address.
func (n *node) nicRecord(nic, msg string) kmsg.Record {
	n.t.Helper()
	sub, dev, err := n.h.KmsgDict(nic)
	if err != nil {
		n.t.Fatal(err)
	}
	return kmsg.Record{Level: 3, Message: fmt.Sprintf(msg, strings.TrimPrefix(dev, "+pci:")), Subsystem: sub, Device: dev}
}

// kmsg writes records into the host's H/dev/kmsg.
func (n *node) kmsg(recs ...kmsg.Record) []uint64 {
	n.t.Helper()
	seqs, err := n.h.WriteKmsg(recs...)
	if err != nil {
		n.t.Fatal(err)
	}
	return seqs
}

func kernelLog(pattern string, kind event.Kind) func(e event.Event) bool {
	return func(e event.Event) bool { return e.Kind == kind && e.Metadata["pattern"] == pattern }
}

// metric returns the sample of family whose labels include every one of
// labels (k="v" strings), and whether there is one.
func metric(m map[string]float64, family string, labels ...string) (float64, bool) {
	for k, v := range m {
		if k != family && !strings.HasPrefix(k, family+"{") {
			continue
		}
		all := true
		for _, l := range labels {
			all = all && strings.Contains(k, l)
		}
		if all {
			return v, true
		}
	}
	return 0, false
}

// TestKernelLog_BlackBox_DriverLinesRaiseAndClearInEveryView: a real
// mlx5 firmware-health, command-timeout, slot-power, module and TX-timeout
// line each becomes one condition on the right port in every view (the
// JSON-lines event, D-Bus, nichealthctl status/ports/check, /metrics,
// STATUS=), once however often it repeats, and clears as its pattern says:
// the fatal ones by acknowledgement, the non-fatal ones after their quiet
// period (shortened here). A failed probe of a function that has no RDMA
// device is the node's condition, in every view too.
func TestKernelLog_BlackBox_DriverLinesRaiseAndClearInEveryView(t *testing.T) {
	t.Parallel()
	v := newShapeViewNode(t, "dgx-h100", `
[[kernelLog.patterns]]
name = "pci_power_insufficient"
quietPeriod = "2s"
[[kernelLog.patterns]]
name = "module_high_temperature"
quietPeriod = "2s"
[[kernelLog.patterns]]
name = "tx_timeout"
quietPeriod = "2s"
`)
	v.start()
	v.waitReady()
	ack := func(dev, what string) func() {
		return func() {
			if err := v.cl.AcknowledgeReset(ctxT(v.t), dev, 1, what); err != nil {
				v.t.Fatalf("ack %s %s: %v", dev, what, err)
			}
		}
	}
	quiet := func() {} // the quiet period passes by itself
	for _, tc := range []struct {
		name, dev, pattern, verdict string
		recs                        []kmsg.Record
		clear                       func()
	}{
		{"firmware health", "mlx5_0", "fw_health_compromised", "fatal",
			[]kmsg.Record{v.nicRecord("mlx5_0", "mlx5_core %s: poll_health:174:(pid 0): device's health compromised - reached miss count")},
			ack("mlx5_0", "kernel_log")},
		{"command timeout, twice", "mlx5_1", "cmd_exec_timeout", "fatal",
			[]kmsg.Record{v.nicRecord("mlx5_1", "mlx5_core %s: wait_func:1189:(pid 72061): ACCESS_REG(0x805) timeout. Will cause a leak of a command resource"),
				v.nicRecord("mlx5_1", "mlx5_core %s: wait_func:1189:(pid 72061): QUERY_VPORT_COUNTER(0x770) timeout. Will cause a leak of a command resource")},
			ack("mlx5_1", "cmd_exec_timeout")},
		{"slot power", "mlx5_2", "pci_power_insufficient", "degraded",
			[]kmsg.Record{v.nicRecord("mlx5_2", "mlx5_core %s: mlx5_pcie_event:299:(pid 268269): Detected insufficient power on the PCIe slot (27W).")},
			quiet},
		{"module temperature", "mlx5_3", "module_high_temperature", "degraded",
			[]kmsg.Record{v.nicRecord("mlx5_3", "mlx5_core %s: mlx5_port_module_event:1131:(pid 0): Port module event[error]: module 0, Cable error, High Temperature")},
			quiet},
		// netdev_err on the RoCE netdev, without a dictionary: the driver's
		// prefix names the function.
		{"TX timeout", "mlx5_8", "tx_timeout", "degraded",
			[]kmsg.Record{{Level: 3, Message: "mlx5_core 0000:41:00.0 enp65s0f0np0: TX timeout detected"}},
			quiet},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v.t = t
			v.agree(verdictWant{tc.dev, 1, "healthy"})
			skip := len(v.read())
			v.kmsg(tc.recs...)
			e := v.waitEventAfter(skip, tc.name, kernelLog(tc.pattern, event.KindKernelLog))
			wantEnts := fmt.Sprint([]event.Entity{{Type: "NIC", Value: tc.dev}, {Type: "NICPort", Value: "1"}})
			if e.IsFatal != (tc.verdict == "fatal") || e.CheckName != "NICKernelLogCheck" || fmt.Sprint(e.EntitiesImpacted) != wantEnts ||
				fmt.Sprint(e.ErrorCode) != "["+tc.pattern+"]" || !strings.Contains(e.Message, tc.recs[0].Message) || e.Metadata["gpus"] == "" {
				t.Fatalf("event %+v", e)
			}
			v.agree(verdictWant{tc.dev, 1, tc.verdict})
			// Once: later polls, and the second record of the same pattern
			// on the same NIC within the window, add no event.
			v.waitPolls(3)
			if c := count(v.read()[skip:], kernelLog(tc.pattern, event.KindKernelLog)); c != 1 {
				t.Fatalf("%d raising events, want 1: %s", c, summary(v.read()[skip:]))
			}
			v.waitMetric("the matches counted", "kernel_log_matches_total", func(m map[string]float64) bool {
				n, ok := metric(m, "nichealth_kernel_log_matches_total", `pattern="`+tc.pattern+`"`, `device="`+tc.dev+`"`)
				return ok && n == float64(len(tc.recs))
			})
			skip = len(v.read())
			tc.clear()
			c := v.waitEventAfter(skip, tc.name+" cleared", kernelLog(tc.pattern, event.KindKernelLogCleared))
			if !c.IsHealthy || fmt.Sprint(c.ErrorCode) != "["+tc.pattern+"]" || fmt.Sprint(c.EntitiesImpacted) != wantEnts {
				t.Fatalf("clear %+v", c)
			}
			v.agree(verdictWant{tc.dev, 1, "healthy"})
		})
	}
	v.t = t

	// A failed probe of a function discovery never saw: the node's own
	// fatal condition, shown by every view that shows the node.
	skip := len(v.read())
	v.kmsg(kmsg.Record{Level: 4, Message: "mlx5_core: probe of 0001:41:00.0 failed with error -22"})
	e := v.waitEventAfter(skip, "failed probe", kernelLog("probe_failed", event.KindKernelLog))
	if !e.IsFatal || fmt.Sprint(e.EntitiesImpacted) != "[{PCI 0001:41:00.0}]" || e.Metadata["pci"] != "0001:41:00.0" {
		t.Fatalf("event %+v", e)
	}
	v.agreeNode("fatal", "probe of 0001:41:00.0 failed")
	ack("mlx5_0", "probe_failed")()
	v.waitEventAfter(skip, "failed probe acknowledged", kernelLog("probe_failed", event.KindKernelLogCleared))
	v.agreeNode("healthy", "")
	v.cmd.Process.Signal(syscall.SIGTERM)
	v.cmd.Wait()
}

// agreeNode waits until every view shows the node's verdict with no port
// worse than healthy: a node-level condition.
func (v *viewNode) agreeNode(verdict, msg string) {
	v.t.Helper()
	deadline := time.Now().Add(waitDeadline)
	for {
		why := v.nodeDisagreement(verdict, msg)
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			v.t.Fatalf("views disagree on the node (%s): %s\nstderr:\n%s", verdict, why, v.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (v *viewNode) nodeDisagreement(verdict, msg string) string {
	m, err := v.cl.Manager(ctxT(v.t))
	if err != nil || m.Verdict != verdict || len(m.FatalPorts) != 0 || len(m.DegradedPorts) != 0 {
		return fmt.Sprintf("D-Bus manager %+v %v", m, err)
	}
	status, code := v.ctl("status")
	check, ccode := v.ctl("check")
	page := v.scrape()
	st := v.lastStatus()
	if verdict == "healthy" {
		if code != 0 || ccode != 0 || strings.Contains(check, "0001:41:00.0:") || !strings.Contains(page, "nichealth_healthy 1") || !strings.HasSuffix(st, "all healthy") {
			return fmt.Sprintf("status exit %d, check exit %d %q, STATUS %q", code, ccode, check, st)
		}
		return ""
	}
	if code != 1 || !strings.Contains(strings.SplitN(status, "\n", 2)[0], ": fatal") || !strings.Contains(status, msg) || ccode != 2 || !strings.Contains(check, "0001:41:00.0:CRITICAL - ") ||
		!strings.Contains(page, "nichealth_healthy 0") || !strings.Contains(st, "0 fatal") {
		return fmt.Sprintf("status exit %d:\n%s\ncheck exit %d: %s\nSTATUS %q", code, status, ccode, check, st)
	}
	return ""
}

// TestKernelLog_BlackBox_OtherWordsRaiseNothing: informational mlx5 lines,
// other drivers' lines with the same words, records written from user
// space and records about functions that are not monitored (a VF, the
// management NIC) raise nothing; the daemon is seen to have judged them
// (its counters), and a gap in the sequence numbers is logged once with
// the number of records lost.
func TestKernelLog_BlackBox_OtherWordsRaiseNothing(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "")
	n.withMetrics()
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	skip := len(n.read())
	recs := []kmsg.Record{
		n.nicRecord("mlx5_0", "mlx5_core %s: port_module:262:(pid 0): Port module event: module 0, Cable plugged"),
		n.nicRecord("mlx5_0", "mlx5_core %s: mlx5_pcie_event:294:(pid 586): PCIe slot advertised sufficient power (75W)."),
		n.nicRecord("mlx5_0", "mlx5_core %s: mlx5_health_try_recover:346:(pid 12): health recovery succeeded"),
		{Level: 2, Message: "ixgbe 0000:05:00.0 eth2: NETDEV WATCHDOG: CPU: 3: transmit queue 0 timed out 5000 ms", Subsystem: "pci", Device: "+pci:0000:05:00.0"},
		{Level: 3, Message: "NETDEV WATCHDOG: eth2 (ixgbe): transmit queue 0 timed out"},
		{Level: 4, Message: "bnxt_en 0000:3b:00.0: Detected insufficient power on the PCIe slot (25W)."},
		{Level: 3, Message: "pci 0000:18:00.0: probe with driver ice failed with error -5"},
		{Level: 3, Message: "watchdog: BUG: soft lockup - CPU#3 stuck for 22s! [kworker/3:1:123]"},
		{Level: 4, Message: " blk_mq_run_work_fn+0x1/0x2"},
		// Not the kernel's own: written from user space.
		{Facility: kmsg.FacilityUser, Level: 3, Message: "mlx5_core 0000:19:00.0: poll_health:174:(pid 0): device's health compromised - reached miss count"},
		// A VF and the management NIC: not monitored.
		n.nicRecord("mlx5_13", "mlx5_core %s: poll_health:174:(pid 0): device's health compromised - reached miss count"),
		n.nicRecord("mlx5_12", "mlx5_core %s: mlx5_cmd_out_err:838:(pid 1441871): ACCESS_REG(0x805) op_mod(0x1) failed, status bad resource(0x5), syndrome (0x305684), err(-22)"),
	}
	seqs := n.kmsg(recs...)
	// A gap of 48 records: the ring overwrote them before they were read.
	n.kmsg(kmsg.Record{Seq: seqs[len(seqs)-1] + 49, Level: 6, Message: "after an overrun"})
	n.waitMetric("every record judged", "nichealth_kernel_log_ignored_total", func(m map[string]float64) bool {
		fac, _ := metric(m, "nichealth_kernel_log_ignored_total", `reason="facility"`)
		unm, _ := metric(m, "nichealth_kernel_log_ignored_total", `reason="unmonitored"`)
		plugged, _ := metric(m, "nichealth_kernel_log_matches_total", `pattern="module_plugged"`, `device="mlx5_0"`)
		return fac == 1 && unm == 2 && plugged == 1 && m["nichealth_kernel_log_lost_total"] == 48 && m["nichealth_kernel_log_records_total"] == float64(len(recs)+1)
	})
	n.waitPolls(2)
	if c := count(n.read()[skip:], func(e event.Event) bool { return e.CheckName == "NICKernelLogCheck" }); c != 0 {
		t.Fatalf("%d kernel-log events: %s", c, summary(n.read()[skip:]))
	}
	if c := strings.Count(n.stderr.String(), `msg="kernel log records lost; the kernel-log check did not see them" lost=48`); c != 1 {
		t.Fatalf("the overrun was logged %d times\n%s", c, n.stderr.String())
	}
	n.stop()
}

// TestKernelLog_BlackBox_RestartMidBurstRepeatsNothingSkipsNothing: the
// daemon stops while a burst of 5,000 records is being judged. On start
// /dev/kmsg hands out its ring from the start again, which the FIFO
// stands in for by being given the whole burst again, same sequence
// numbers: the restarted daemon judges exactly the records it had not,
// so the condition counts 5,000, no more and no less, and was raised once.
func TestKernelLog_BlackBox_RestartMidBurstRepeatsNothingSkipsNothing(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", `
[[kernelLog.patterns]]
name = "access_reg_failed"
dedupeWindow = "1s"
`)
	n.withMetrics()
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	const burst = 5000
	line := n.nicRecord("mlx5_0", "mlx5_core %s: mlx5_cmd_out_err:838:(pid 1441871): ACCESS_REG(0x805) op_mod(0x1) failed, status bad resource(0x5), syndrome (0x305684), err(-22)")
	recs := make([]kmsg.Record, burst)
	for i := range recs {
		recs[i] = line
		recs[i].Seq = uint64(i + 1)
	}
	n.kmsg(recs...)
	// Stop as soon as the daemon has judged part of it.
	n.waitEvent("the burst raised", kernelLog("access_reg_failed", event.KindKernelLog))
	n.stop()
	counts := func() []int {
		var out []int
		for _, e := range n.read() {
			if kernelLog("access_reg_failed", event.KindKernelLog)(e) {
				c, _ := strconv.Atoi(e.Metadata["count"])
				out = append(out, c)
			}
		}
		return out
	}
	before := counts()
	if before[len(before)-1] >= burst {
		t.Logf("the whole burst was judged before the stop (%v): the restart resumes at its end", before)
	}
	n.start()
	n.kmsg(recs...)
	n.waitEvent("the count reported complete", func(e event.Event) bool {
		return kernelLog("access_reg_failed", event.KindKernelLog)(e) && e.Metadata["count"] == strconv.Itoa(burst)
	})
	n.waitPolls(15) // past another de-duplication window: no further count
	n.stop()
	after := counts()
	t.Logf("counts reported: %v before the restart, %v in all", before, after)
	for _, c := range after {
		if c > burst {
			t.Fatalf("counts %v: records judged twice", after)
		}
	}
	if after[len(after)-1] != burst {
		t.Fatalf("counts %v: records skipped", after)
	}
	if c := count(n.read(), func(e event.Event) bool {
		return kernelLog("access_reg_failed", event.KindKernelLog)(e) && e.Metadata["count"] == "1"
	}); c != 1 {
		t.Fatalf("raised %d times: %v", c, after)
	}
}

// TestKernelLog_BlackBox_StormKeepsThePollCadence: a storm of 10,000
// records of one pattern on one NIC is one condition and one event, and
// the poll loop keeps its cadence: no poll judges more than the batch
// (1,024 records), so the storm is spread over at least ten polls while
// the polls go on, as the daemon's own poll counter shows; none is
// dropped or lost (the reader's queue holds 16,384, and a full one holds
// the reader back).
func TestKernelLog_BlackBox_StormKeepsThePollCadence(t *testing.T) {
	t.Parallel()
	n := newNode(t, "dgx-h100", "")
	n.withMetrics()
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	const storm, batch = 10000, 1024
	skip := len(n.read())
	line := n.nicRecord("mlx5_0", "mlx5_core %s: mlx5_cmd_out_err:838:(pid 1441871): ACCESS_REG(0x805) op_mod(0x1) failed, status bad resource(0x5), syndrome (0x305684), err(-22)")
	recs := make([]kmsg.Record, storm)
	for i := range recs {
		recs[i] = line
	}
	url := n.metricsURL()
	before, err := n.scrape(url)
	if err != nil {
		t.Fatal(err)
	}
	n.kmsg(recs...)
	var polls float64
	n.waitMetric("the whole storm judged", "kernel_log_matches_total", func(m map[string]float64) bool {
		c, _ := metric(m, "nichealth_kernel_log_matches_total", `pattern="access_reg_failed"`, `device="mlx5_0"`)
		polls = m[pollCount]
		return c == storm
	})
	if got := polls - before[pollCount]; got < storm/batch {
		t.Fatalf("the storm was judged in %v polls; a poll judges at most %d records, so at least %d were needed", got, batch, storm/batch)
	}
	m, _ := n.scrape(url)
	if m["nichealth_kernel_log_dropped_total"] != 0 || m["nichealth_kernel_log_lost_total"] != 0 {
		t.Fatalf("dropped %v lost %v", m["nichealth_kernel_log_dropped_total"], m["nichealth_kernel_log_lost_total"])
	}
	if c := count(n.read()[skip:], func(e event.Event) bool { return e.CheckName == "NICKernelLogCheck" }); c != 1 {
		t.Fatalf("%d kernel-log events for one storm: %s", c, summary(n.read()[skip:]))
	}
	n.stop()
}

// TestKernelLog_BlackBox_RealDevKmsgAsRoot: the daemon reads the real
// /dev/kmsg (devRoot = "/dev") while the test writes mlx5 lines into it.
// A record written from user space gets the user facility (the kernel's
// cannot be forged), so by default it raises nothing, though the daemon
// read it; with matchUserSpace = true the same line raises the condition
// on the simulated NIC it names.
func TestKernelLog_BlackBox_RealDevKmsgAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		component.Missing(t, "needs root to write /dev/kmsg and to read it under kernel.dmesg_restrict=1")
	}
	if f, err := os.Open("/dev/kmsg"); err != nil {
		component.Missing(t, "cannot read /dev/kmsg: %v", err)
	} else {
		f.Close()
	}
	// kernel.printk_devkmsg=ratelimit drops writes beyond a burst; the
	// test's few lines fit it, but "off" refuses them: set "on" for the
	// test and put the old value back.
	const knob = "/proc/sys/kernel/printk_devkmsg"
	old, err := os.ReadFile(knob)
	if err != nil {
		component.Missing(t, "cannot read %s: %v", knob, err)
	}
	if strings.TrimSpace(string(old)) != "on" {
		if err := os.WriteFile(knob, []byte("on\n"), 0o644); err != nil {
			component.Missing(t, "cannot set %s: %v", knob, err)
		}
		t.Cleanup(func() { os.WriteFile(knob, old, 0o644) })
	}
	n := newNode(t, "dgx-h100", "[linkSanity]\ncharDevices = false\n")
	b, _ := os.ReadFile(n.cfg)
	cfg := strings.Replace(string(b), fmt.Sprintf("devRoot = %q", n.h.DevRoot()), `devRoot = "/dev"`, 1)
	if err := os.WriteFile(n.cfg, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	n.withMetrics()
	n.start()
	n.waitEvent("baseline", portEvent("mlx5_0", event.KindPortBaseline))
	n.waitMetric("/dev/kmsg read", "nichealth_kernel_log_reading", func(m map[string]float64) bool {
		return m["nichealth_kernel_log_reading"] == 1
	})
	d, _ := n.h.Device("mlx5_0")
	write := func(tag string) uint64 {
		t.Helper()
		mine := kmsg.Open(kmsg.Options{Path: "/dev/kmsg"})
		defer mine.Close()
		w, err := os.OpenFile("/dev/kmsg", os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("<3>mlx5_core %s: poll_health:174:(pid 0): device's health compromised - reached miss count %s\n", d.PCIAddress, tag)
		_, err = w.Write([]byte(line))
		w.Close()
		if err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(waitDeadline); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			for _, r := range mine.Drain(nil, 0) {
				if strings.HasSuffix(r.Message, tag) {
					if r.Facility != kmsg.FacilityUser {
						t.Fatalf("a record written from user space has facility %d", r.Facility)
					}
					return r.Seq
				}
			}
		}
		t.Fatalf("the record %s never showed in /dev/kmsg", tag)
		return 0
	}
	skip := len(n.read())
	seq := write("nichealth-bb-default")
	n.waitMetric("the record read", "nichealth_kernel_log_sequence", func(m map[string]float64) bool {
		return m["nichealth_kernel_log_sequence"] >= float64(seq)
	})
	n.waitPolls(2)
	if c := count(n.read()[skip:], func(e event.Event) bool { return e.CheckName == "NICKernelLogCheck" && !e.IsHealthy }); c != 0 {
		t.Fatalf("a user-space record raised %d events: %s", c, summary(n.read()[skip:]))
	}
	n.waitMetric("the record ignored for its facility", "nichealth_kernel_log_ignored_total", func(m map[string]float64) bool {
		v, _ := metric(m, "nichealth_kernel_log_ignored_total", `reason="facility"`)
		return v >= 1
	})

	b, _ = os.ReadFile(n.cfg)
	if err := os.WriteFile(n.cfg, append(b, []byte("[kernelLog]\nmatchUserSpace = true\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	n.cmd.Process.Signal(syscall.SIGHUP)
	n.waitMetric("the reload applied", "nichealth_config_generation", func(m map[string]float64) bool {
		return m["nichealth_config_generation"] == 2
	})
	write("nichealth-bb-user-space-on")
	e := n.waitEventAfter(skip, "the user-space record judged", kernelLog("fw_health_compromised", event.KindKernelLog))
	if !e.IsFatal || e.Device() != "mlx5_0" || !strings.HasSuffix(e.Metadata["record"], "nichealth-bb-user-space-on") {
		t.Fatalf("event %+v", e)
	}
	n.stop()
}
