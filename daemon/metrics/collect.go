package metrics

import (
	"strconv"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/mad/fabricshare"
)

// Source is the daemon as the endpoint sees it. Manager, Ports, Outbox
// and Sinks are called once per scrape, from a goroutine of their own, and
// may take the daemon's lock; Stalled and Snapshot are called by /healthz
// on the request goroutine and must not take any lock the poll loop holds
// while polling, because it has to answer precisely when that loop is
// wedged.
type Source interface {
	// Snapshot is the published verdict (checks/health): the endpoint
	// shows what every other view shows, and judges nothing itself.
	Snapshot() *health.Snapshot
	// LastPoll is when the last poll completed (zero before the first).
	LastPoll() time.Time
	Outbox() OutboxStats
	Sinks() []SinkStats
	// Stalled reports whether the poll loop has made no progress for
	// longer than the watchdog allows (the same gate as WATCHDOG=1).
	Stalled() bool
	// Undeliverable says why events cannot be made durable (the outbox
	// refuses appends), or "" when they can: the daemon polls but what
	// it detects cannot reach anyone. Same rule as Stalled: no lock the
	// poll loop holds.
	Undeliverable() string
}

// OutboxStats is what the endpoint shows of the durable outbox: the
// daemon fills it from the outbox's own statistics, so the endpoint reads
// no file and links no persistence code.
type OutboxStats struct {
	LastSeq  uint64 // highest sequence number assigned; 0 before any
	Records  int    // records retained on disk
	Bytes    int64  // bytes of all segments
	Segments int
	// Folded counts events the size bound removed because a newer one of
	// the same condition superseded them; Dropped those removed without
	// one; Corrupt the damaged regions skipped.
	Folded, Dropped, Corrupt uint64
	// OverBound: the bound is exceeded because only the latest event of
	// each condition remains undelivered.
	OverBound bool
	Sinks     map[string]OutboxSink
	// Held is the number of events detected but not yet in the outbox
	// (the daemon's, not the outbox's: held in memory while appends are
	// refused or hang).
	Held int
}

// OutboxSink is one sink's queue in the outbox: the records after its
// delivery position, and the events it rejected as invalid (parked).
type OutboxSink struct {
	Depth    int
	Rejected int
}

// SinkStats is one event destination's delivery totals since start.
type SinkStats struct {
	Name   string
	Sent   uint64 // events delivered (acknowledged by the destination)
	Failed uint64 // events in batches that failed (each retry counts again)
}

// snapshot is everything one scrape shows, gathered in one go so the page
// is as consistent as the Source's own views.
type snapshot struct {
	health   *health.Snapshot
	lastPoll time.Time
	ob       OutboxStats
	sinks    []SinkStats
	stalled  bool
	// fabric is the share of the fabric's switch ports (nil: none read,
	// or a Source that reads none).
	fabric *fabricshare.ShareReading
}

func gather(src Source) snapshot {
	h := src.Snapshot()
	if h == nil {
		h = health.Build(health.Node{}, nil, nil)
	}
	s := snapshot{
		health:   h,
		lastPoll: src.LastPoll(),
		ob:       src.Outbox(),
		sinks:    src.Sinks(),
		stalled:  src.Stalled(),
	}
	if fs, ok := src.(FabricSource); ok {
		s.fabric = fs.Fabric()
	}
	return s
}

// Metric families, indexing the table below.
const (
	mBuildInfo = iota
	mUp
	mReady
	mHealthy
	mPollStalled
	mMonitoredPorts
	mMonitoredNICs
	mFatalPorts
	mDegradedPorts
	mConditions
	mConfigGeneration
	mConfigReloadFailed
	mPollInterval
	mLastPoll
	mPollDuration
	mPortHealthy
	mPortFatal
	mPortVerdict
	mPortState
	mPortPhysState
	mPortStateInfo
	mPortInfo
	mPortRate
	mPortLastChange
	mPortXmitWaitLostGbps
	mPortXmitWaitLostPercent
	mPortLinkDownEpisodes
	mSanityFindings
	mCableVerdict
	mCounterValue
	mCounterRate
	mCounterBreached
	mCounterSaturated
	mPeerCounter
	mPeerBreached
	mPeerReadTime
	mPeerReadErrors
	mPeerReadInterval
	mOutboxRecords
	mOutboxBytes
	mOutboxSegments
	mOutboxLastSeq
	mOutboxDropped
	mOutboxCorrupt
	mOutboxOverBound
	mOutboxDepth
	mEventsSent
	mEventsFailed
	mOutboxFolded
	mOutboxHeld
	mEventsRejected
	mParkedFiles
	mParkedFile
	mPCIeAERErrors
	mPCIeAERRootPort
	mKernelLogReading
	mKernelLogRecords
	mKernelLogSequence
	mKernelLogMatches
	mKernelLogDropped
	mKernelLogLost
	mKernelLogIgnored
	mKernelLogCarried
	mNICInfo
	mNICFunctionFatal
	mModuleInfo
	mModuleTemperature
	mModuleVoltage
	mModuleTxBias
	mModuleTxPower
	mModuleRxPower
	mDevlinkReporterError
	mDevlinkReporterErrors
	mDevlinkReporterRecoveries
	mDevlinkActivationPending
	mFabricPortCounter
	mFabricPortReadErrors
	mFabricPortLastRead
	mFabricAssignedPorts
	mFabricAssignmentValid
	mRoCEClass
	mRoCERate
	mRoCEStormEvents
	mRoCEPauseLostGbps
	mRoCEPauseLostPercent
	mFabricRefusedPorts
	numFamilies
)

// descriptors is the metric table. Port-level gauges carry the port's
// identity (device, port, role, link_layer) so an alert can route on the
// role without a join; counter-level ones carry device, port and counter.
func descriptors() [numFamilies]desc {
	const p = "nichealth_"
	return [numFamilies]desc{
		mBuildInfo:          {p + "build_info", "Always 1; the version label is the running nichealthd version.", gauge},
		mUp:                 {p + "up", "Always 1 while the daemon serves this endpoint.", gauge},
		mReady:              {p + "ready", "1 once the first complete poll has run (systemd READY=1 was sent).", gauge},
		mHealthy:            {p + "healthy", "1 when no condition is active on the node (nothing fatal or degraded).", gauge},
		mPollStalled:        {p + "poll_stalled", "1 while the poll loop has made no progress for longer than the watchdog allows.", gauge},
		mMonitoredPorts:     {p + "monitored_ports", "Number of monitored ports.", gauge},
		mMonitoredNICs:      {p + "monitored_nics", "Number of monitored NIC devices.", gauge},
		mFatalPorts:         {p + "fatal_ports", "Number of ports whose verdict is fatal (a fatal condition on the port, its NIC or its card).", gauge},
		mDegradedPorts:      {p + "degraded_ports", "Number of ports whose verdict is degraded (only non-fatal conditions).", gauge},
		mConditions:         {p + "conditions", "Active conditions by check and severity (nichealthctl status lists them).", gauge},
		mConfigGeneration:   {p + "config_generation", "Configuration generation; starts at 1 and grows by one per applied reload.", gauge},
		mConfigReloadFailed: {p + "config_reload_failed", "1 when the last reload was refused and the previous configuration still runs.", gauge},
		mPollInterval:       {p + "poll_interval_seconds", "Configured poll interval.", gauge},
		mLastPoll:           {p + "last_poll_timestamp_seconds", "Unix time of the last completed poll (0 before the first).", gauge},
		mPollDuration:       {p + "poll_duration_seconds", "Duration of poll cycles.", histogram},
		mPortHealthy:        {p + "port_healthy", "1 when no condition covers the port (its state, counters, NIC or card).", gauge},
		mPortFatal:          {p + "port_fatal", "1 when a fatal condition covers the port (state, latched fatal counter, vanished NIC, card anomaly).", gauge},
		mPortVerdict:        {p + "port_verdict", "The port's verdict: 0 healthy, 1 degraded, 2 fatal.", gauge},
		mPortState:          {p + "port_state", "Logical port state id: 1 DOWN, 2 INIT, 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER; 0 not read yet or unreadable.", gauge},
		mPortPhysState:      {p + "port_phys_state", "Physical port state id: 1 Sleep, 2 Polling, 3 Disabled, 4 PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 Phy Test; 0 not read yet or unreadable.", gauge},
		mPortStateInfo:      {p + "port_state_info", "Always 1; state and phys_state labels carry the names sysfs prints.", gauge},
		mPortInfo:           {p + "port_info", "Always 1; node_guid and port_guid identify the port in the fabric as ibnetdiscover prints them (0x and 16 hex digits), so a fabric view joins ports by GUID.", gauge},
		mPortRate:           {p + "port_rate_gbps", "Port rate in Gb/s from ports/<n>/rate (absent when unreadable).", gauge},
		mPortLastChange:     {p + "port_last_change_timestamp_seconds", "Unix time of the port's last healthy/unhealthy crossing (absent when none seen).", gauge},
		mPortXmitWaitLostGbps: {p + "port_xmit_wait_lost_gbps",
			"Bandwidth the port lost waiting for transmit credits, estimated from port_xmit_wait, in Gb/s.", gauge},
		mPortXmitWaitLostPercent: {p + "port_xmit_wait_lost_percent",
			"Estimated port_xmit_wait bandwidth loss as a percentage of the port rate (0 when the rate is unknown).", gauge},
		mPortLinkDownEpisodes: {p + "port_link_down_episodes_total",
			"Link-down episodes of the port this boot (a link_downed or link_down_events_phy step or a fall from ACTIVE to DOWN, each episode counted once; carrier_changes is a netdev event, not one), counted as the node's flap rule counts them.", counter},
		mSanityFindings: {p + "sanity_findings", "Number of link sanity findings (PCIe width/speed, SM LID, character devices); list them with nichealthctl port DEVICE PORT.", gauge},
		mCableVerdict: {p + "cable_verdict",
			"Always 1; the port's cable verdict: direction (none, to-host, from-host, both: which receiver counts errors) and suspect (host-transceiver, peer-transceiver, cable, host-port, unknown; empty when nothing is suspect), as nichealthctl cables shows it.", gauge},
		mCounterValue:     {p + "hwcounter_value", "Last value read from the counter file (hardware counters may reset or saturate, so this is a gauge).", gauge},
		mCounterRate:      {p + "hwcounter_rate", "Rate of a velocity counter over its last full window, per unit (second, minute or hour), latched or not (the breach's own rate is in the latched condition's message); for a ber counter, its bit error rate (unit \"ber\").", gauge},
		mCounterBreached:  {p + "hwcounter_breached", "1 while the counter's threshold breach is latched (clear with nichealthctl ack).", gauge},
		mCounterSaturated: {p + "hwcounter_saturated", "1 when the counter is stuck at its maximum and its rate is a lower bound.", gauge},
		mPeerCounter: {p + "peer_port_counter",
			"A PortCounters field of the switch port at the far end of the port's cable (peer_guid, peer_port; peer_name from the node-name map or the NodeDescription), read by MAD; the switch's counter, never cleared by nichealthd.", gauge},
		mPeerBreached: {p + "peer_port_counter_breached",
			"1 while the far end's counter (a counter table row judging the field) has a latched breach; clear with nichealthctl ack DEV PORT peer:<counter>.", gauge},
		mPeerReadTime: {p + "peer_port_read_timestamp_seconds",
			"Unix time of the last good read of the far end's counters. While reads fail (the MAD helper stopped, the fabric frozen) the far end's series stay with their last values and this stays put: time() minus it is how stale they are (alert NICPeerPortUnread).", gauge},
		mPeerReadInterval: {p + "peer_port_read_interval_seconds",
			"Configured [farEnd] interval: how often the far end's counters are read (absent while the far end is off). NICPeerPortUnread fires when a read is three intervals old.", gauge},
		mPeerReadErrors: {p + "peer_port_read_errors_total",
			"Failed attempts to find or read the far end of the port (a MAD timeout, the helper not answering) since the daemon started.", counter},
		mOutboxRecords:   {p + "outbox_records", "Events retained in the outbox.", gauge},
		mOutboxBytes:     {p + "outbox_bytes", "Bytes of all outbox segments.", gauge},
		mOutboxSegments:  {p + "outbox_segments", "Number of outbox segment files.", gauge},
		mOutboxLastSeq:   {p + "outbox_last_sequence", "Highest event sequence number assigned.", gauge},
		mOutboxDropped:   {p + "outbox_dropped_total", "Non-fatal events discarded by the outbox size bound since start.", counter},
		mOutboxCorrupt:   {p + "outbox_corrupt_total", "Damaged outbox regions skipped since start.", counter},
		mOutboxOverBound: {p + "outbox_over_bound", "1 when the outbox exceeds its size bound because only fatal and recovery events remain undelivered.", gauge},
		mOutboxDepth:     {p + "outbox_depth", "Events in the outbox that the sink has not acknowledged yet.", gauge},
		mEventsSent:      {p + "events_sent_total", "Events delivered by the sink since start.", counter},
		mOutboxFolded:    {p + "outbox_folded_total", "Undelivered events removed by the outbox size bound since start because a newer event of the same check and entity superseded them.", counter},
		mOutboxHeld:      {p + "outbox_held_events", "Events detected but not yet durable in the outbox: held in memory while it refuses appends or a write to the state directory has not returned (the NICHealthOutbox condition says which).", gauge},
		mEventsRejected:  {p + "events_rejected", "Events the sink rejected as invalid, parked until nichealthctl events --retry-rejected or a reload offers them again.", gauge},
		mEventsFailed:    {p + "events_failed_total", "Events in delivery attempts that failed since start (retries count again).", counter},
		mParkedFiles:     {p + "parked_files", "Files parked after failing with EINVAL, EIO, EOPNOTSUPP, EACCES or EPERM three times in a row: not read each poll, re-probed every parkReprobeInterval.", gauge},
		mParkedFile:      {p + "parked_file", "Always 1 for each parked file; device, port and file say which (nichealthctl port DEVICE PORT shows why).", gauge},
		mPCIeAERErrors:   {p + "pcie_aer_errors_total", "PCIe AER errors the kernel counted on a PCI function on a monitored NIC's path (the NIC function, switch and root ports) this boot, by severity (correctable, nonfatal, fatal).", counter},
		mPCIeAERRootPort: {p + "pcie_aer_rootport_errors_total", "PCIe AER errors a root port above a monitored NIC received from every device below it this boot (aer_rootport_total_err_*), by severity; shown, not judged.", counter},
		mNICInfo: {p + "nic_info", "Always 1 for each NVIDIA/Mellanox NIC function on the PCI bus (VFs left out): its identity (fw_ver, board_id: the PSID, serial), " +
			"its RDMA device and driver, and state (ok, unbound, other-driver, no-rdma). Group by fw_ver or board_id to see drift across a fleet.", gauge},
		mNICFunctionFatal:          {p + "nic_function_fatal", "1 for each NIC function with a fatal inventory condition: on the bus without a usable RDMA device, or gone since the last boot (nichealthctl status names it).", gauge},
		mKernelLogReading:          {p + "kernel_log_reading", "1 while the kernel log (<devRoot>/kmsg) is open and read; 0 when it cannot be (the log says why: CAP_SYSLOG, no /dev/kmsg).", gauge},
		mKernelLogRecords:          {p + "kernel_log_records_total", "Kernel log records read since start.", counter},
		mKernelLogSequence:         {p + "kernel_log_sequence", "The kernel's sequence number of the newest kernel log record read (dmesg -r shows them).", gauge},
		mKernelLogMatches:          {p + "kernel_log_matches_total", "Kernel log records matched by each pattern since start, by the device they named (the NIC, else the PCI address, else none); records the kernel's rate limiter suppressed count too.", counter},
		mKernelLogDropped:          {p + "kernel_log_dropped_total", "Kernel log records dropped since start: longer than the kernel's 8 KiB bound, or not in its format. (A full queue holds the reader back instead; records the ring overwrote meanwhile count as lost.)", counter},
		mKernelLogLost:             {p + "kernel_log_lost_total", "Kernel log records the kernel's ring overwrote before they were read (overruns, and records gone while the daemon was down), since start.", counter},
		mKernelLogIgnored:          {p + "kernel_log_ignored_total", "Kernel log records not judged or not raised since start, by reason: facility (written from user space), unmonitored (about a function not monitored), unattributed (naming no function where the pattern needs one), overflow (past the check's bounds on conditions: counted on its kernel_log_overflow condition, not raised one by one), over_budget (more waited than a cycle's batch).", counter},
		mKernelLogCarried:          {p + "kernel_log_carried", "Kernel log records read and waiting for the next cycle: a cycle judges within a work budget and carries the rest (the reader's queue and the kernel's ring hold more).", gauge},
		mModuleInfo:                {p + "module_info", "Always 1 for each RoCE port's transceiver as the last once-a-minute pass read it: its type, vendor, part and serial number.", gauge},
		mModuleTemperature:         {p + "module_temperature_celsius", "The transceiver's temperature as the module reports it.", gauge},
		mModuleVoltage:             {p + "module_voltage_volts", "The transceiver's 3.3 V supply as the module reports it.", gauge},
		mModuleTxBias:              {p + "module_tx_bias_amperes", "A lane's laser bias current as the module reports it.", gauge},
		mModuleTxPower:             {p + "module_tx_power_watts", "A lane's transmitted optical power as the module reports it (0: dark).", gauge},
		mModuleRxPower:             {p + "module_rx_power_watts", "A lane's received optical power as the module reports it (0: no light; at or below 1e-6 W, -30 dBm, on an unused lane it is no fault).", gauge},
		mDevlinkReporterError:      {p + "devlink_reporter_error", "1 while a NIC function's devlink health reporter (fw, fw_fatal, vnic) is in error state.", gauge},
		mDevlinkReporterErrors:     {p + "devlink_reporter_errors_total", "Errors a NIC function's devlink health reporter counted since the driver loaded.", counter},
		mDevlinkReporterRecoveries: {p + "devlink_reporter_recoveries_total", "Recoveries a NIC function's devlink health reporter counted since the driver loaded.", counter},
		mDevlinkActivationPending:  {p + "devlink_firmware_activation_pending", "1 when the firmware flashed on a NIC function (stored fw.version) is not the one running: a reset or reboot activates it.", gauge},
		// The fabric share's counter values are gauges: they are the
		// switch's own counters as last read, which the fabric's
		// operators may clear (perfquery -R) and whose 8- and 16-bit
		// fields saturate where PortCountersExtended does not carry them;
		// TYPE counter would promise a monotonic series. increase() and
		// rate() over them still work between clears.
		mFabricPortCounter: {p + "fabric_port_counter",
			"A PMA counter of a switch port this host was assigned by nichealth-fabric plan, as last read (counter is the PortCounters field name as perfquery prints it; 64-bit from PortCountersExtended where the switch offers it). The switch's counter, never cleared by nichealthd; a gauge, since the fabric's operators may clear it.", gauge},
		mFabricPortReadErrors: {p + "fabric_port_read_errors_total",
			"Failed reads of an assigned switch port since the daemon started (or since the port was assigned): no answer, a PMA error, or its switch's LID now held by another node (re-run nichealth-fabric plan).", counter},
		mFabricPortLastRead: {p + "fabric_port_last_read_timestamp_seconds",
			"Unix time of the last good read of an assigned switch port (absent before the first).", gauge},
		mFabricAssignedPorts: {p + "fabric_assigned_ports",
			"Switch ports in the fabric assignment in force ([fabric] assignment; 0 when there is none).", gauge},
		mFabricAssignmentValid: {p + "fabric_assignment_valid",
			"0 while the last version of the fabric assignment file was refused (the log says why; the list in force is kept), else 1.", gauge},
		// DESIGN.md section 16 (roce.go).
		mRoCEClass: {p + "roce_class",
			"1 while a RoCE port is in the class (roce-congested: ECN marks and CNPs with no loss, information only; roce-lossy, roce-rx-starved, roce-pause-storm: non-fatal conditions), else 0; every class of every judged RoCE port.", gauge},
		mRoCERate: {p + "roce_signal_rate",
			"A RoCE port's signals over its last window, per second: congestion (ECN-marked packets and CNPs sent and handled), loss (sequence errors and retransmission triggers), out_of_buffer, rx_discards_phy.", gauge},
		mRoCEStormEvents: {p + "roce_pause_storm_events",
			"Pause storm events (tx_pause_storm_warning_events and tx_pause_storm_error_events) a RoCE port counted in its last window.", gauge},
		mRoCEPauseLostGbps: {p + "roce_pause_lost_gbps",
			"Bandwidth a RoCE port could not send over its last window because its peer paused it, for the priority paused longest (label priority), in Gb/s.", gauge},
		mRoCEPauseLostPercent: {p + "roce_pause_lost_percent",
			"The same as nichealth_roce_pause_lost_gbps in percent of the port rate.", gauge},
		mFabricRefusedPorts: {p + "fabric_refused_ports",
			"Entries of the fabric assignment in force that are not read because what answers at the switch's LID cannot have them: not a switch (a CA's GUID and LID), or fewer ports than the entry's number. Each is logged once with its reason; re-run nichealth-fabric plan.", gauge},
	}
}

// fill turns a snapshot into samples. The histogram is written separately.
func fill(e *encoder, s *snapshot) {
	fillNode(e, s)
	fillParked(e, s)
	for i := range s.health.Ports {
		fillPort(e, &s.health.Ports[i])
	}
	fillOutbox(e, s)
	fillAER(e, s)
	fillKernelLog(e, s)
	fillInventory(e, s)
	fillLinkStory(e, s)
	fillFabric(e, s)
	fillRoCE(e, s)
}

// fillNode writes the daemon-wide families: the node's verdict, its
// conditions by check and severity, configuration and poll liveness.
func fillNode(e *encoder, s *snapshot) {
	none := e.labels()
	h := s.health
	n := &h.Node
	e.add(mBuildInfo, e.labels("version", n.Version), uval(1))
	e.add(mUp, none, uval(1))
	e.add(mReady, none, bval(n.Ready))
	e.add(mHealthy, none, bval(h.Healthy()))
	e.add(mPollStalled, none, bval(s.stalled))
	e.add(mMonitoredPorts, none, uval(uint64(len(h.Ports))))
	e.add(mMonitoredNICs, none, uval(uint64(h.NICs)))
	e.add(mFatalPorts, none, uval(uint64(len(h.FatalPorts))))
	e.add(mDegradedPorts, none, uval(uint64(len(h.DegradedPorts))))
	type condKey struct{ check, sev string }
	conds := map[condKey]uint64{}
	for _, c := range h.Conditions {
		conds[condKey{c.Check, c.Severity.String()}]++
	}
	for k, v := range conds { // map order is fine: writeFamily sorts
		e.add(mConditions, e.labels("check", k.check, "severity", k.sev), uval(v))
	}
	e.add(mConfigGeneration, none, uval(n.ConfigGeneration))
	e.add(mConfigReloadFailed, none, bval(n.LastReloadError != ""))
	e.add(mPollInterval, none, fval(n.PollInterval.Seconds()))
	if n.FarEndInterval > 0 {
		e.add(mPeerReadInterval, none, fval(n.FarEndInterval.Seconds()))
	}
	lp := 0.0
	if !s.lastPoll.IsZero() {
		lp = float64(s.lastPoll.UnixMicro()) / 1e6
	}
	e.add(mLastPoll, none, fval(lp))
}

// fillPort writes one port's verdict, state, rate and counters.
func fillPort(e *encoder, pv *health.Port) {
	var portBuf [12]byte
	port := string(strconv.AppendInt(portBuf[:0], int64(pv.Port), 10))
	id := e.labels("device", pv.Device, "port", port, "role", pv.Role, "link_layer", pv.LinkLayer)
	e.add(mPortHealthy, id, bval(pv.Verdict == health.Healthy))
	e.add(mPortFatal, id, bval(pv.Verdict == health.Fatal))
	e.add(mPortVerdict, id, uval(uint64(pv.Verdict)))
	e.add(mPortState, id, uval(stateID(pv.Link.State.ID)))
	e.add(mPortPhysState, id, uval(stateID(pv.Link.Phys.ID)))
	e.add(mPortStateInfo, e.labels("device", pv.Device, "port", port, "state", pv.State, "phys_state", pv.PhysState), uval(1))
	if pv.NodeGUID != "" || pv.PortGUID != "" {
		e.add(mPortInfo, e.labels("device", pv.Device, "port", port, "node_guid", pv.NodeGUID, "port_guid", pv.PortGUID, "link_layer", pv.LinkLayer), uval(1))
	}
	if pv.RateGbps > 0 {
		e.add(mPortRate, id, fval(pv.RateGbps))
	}
	if !pv.LastChange.IsZero() {
		e.add(mPortLastChange, id, fval(float64(pv.LastChange.UnixMicro())/1e6))
	}
	short := e.labels("device", pv.Device, "port", port)
	findings := 0
	for _, c := range pv.Conditions {
		if c.IsSanityFinding() {
			findings++
		}
	}
	e.add(mSanityFindings, short, uval(uint64(findings)))
	e.add(mPortLinkDownEpisodes, id, uval(pv.LinkDownEpisodes))
	if !pv.Missing && pv.Cable.Direction != "" {
		e.add(mCableVerdict, e.extend(e.extend(short, "direction", pv.Cable.Direction), "suspect", pv.Cable.Suspect), uval(1))
	}
	if xw := xmitWait(pv.Counters); xw != nil {
		e.add(mPortXmitWaitLostGbps, short, fval(xw.LostGbps))
		e.add(mPortXmitWaitLostPercent, short, fval(xw.LostPercent))
	}
	for j := range pv.Counters {
		c := &pv.Counters[j]
		cl := e.extend(short, "counter", c.Name)
		e.add(mCounterValue, cl, uval(c.Value))
		e.add(mCounterBreached, cl, bval(c.Breached))
		e.add(mCounterSaturated, cl, bval(c.Saturated))
		if c.ThresholdType == "velocity" || c.ThresholdType == "ber" {
			e.add(mCounterRate, e.extend(cl, "unit", unitName(c.Unit)), fval(c.Rate))
		}
	}
	if pr := pv.Peer; pr != nil {
		e.add(mPeerReadErrors, short, uval(pr.ReadErrors))
	}
	// The last peer read keeps its series while reads fail (Found false),
	// aged by its read timestamp: a frozen fabric is not a vanished one.
	// Only that one peer per port is exported: a peer that changes GUID on
	// every read replaces its series, never adds to them.
	if pr := pv.Peer; pr != nil && pr.GUID != "" && !pr.ReadAt.IsZero() {
		var peerBuf [12]byte
		peer := e.labels("device", pv.Device, "port", port, "peer_guid", pr.GUID,
			"peer_port", string(strconv.AppendInt(peerBuf[:0], int64(pr.Port), 10)), "peer_name", pr.Name)
		e.add(mPeerReadTime, peer, fval(float64(pr.ReadAt.UnixMicro())/1e6))
		for j := range pr.Counters {
			c := &pr.Counters[j]
			cl := e.extend(peer, "counter", c.Field)
			e.add(mPeerCounter, cl, uval(c.Value))
			for _, row := range c.Latched {
				e.add(mPeerBreached, e.extend(peer, "counter", row), uval(1))
			}
		}
	}
}

// fillOutbox writes the outbox and delivery families.
func fillOutbox(e *encoder, s *snapshot) {
	none := e.labels()
	ob := &s.ob
	e.add(mOutboxRecords, none, uval(uint64(max(ob.Records, 0))))
	e.add(mOutboxBytes, none, uval(uint64(max(ob.Bytes, 0))))
	e.add(mOutboxSegments, none, uval(uint64(max(ob.Segments, 0))))
	e.add(mOutboxLastSeq, none, uval(ob.LastSeq))
	e.add(mOutboxDropped, none, uval(ob.Dropped))
	e.add(mOutboxCorrupt, none, uval(ob.Corrupt))
	e.add(mOutboxOverBound, none, bval(ob.OverBound))
	for name, st := range ob.Sinks { // map order is fine: writeFamily sorts
		e.add(mOutboxDepth, e.labels("sink", name), uval(uint64(max(st.Depth, 0))))
	}
	for _, sk := range s.sinks {
		sl := e.labels("sink", sk.Name)
		e.add(mEventsSent, sl, uval(sk.Sent))
		e.add(mEventsFailed, sl, uval(sk.Failed))
	}
}

// stateID is the kernel's number of a state, so an alert can say
// port_state < 4: 0 when it was not read yet or is unknown.
func stateID(id int) uint64 { return uint64(max(id, 0)) }

// xmitWait finds the port_xmit_wait counter, whose rate the daemon turns
// into lost bandwidth (seeds/xmit-wait-congestion.txt). A renamed custom
// counter reading the same file is recognised by a non-zero loss.
func xmitWait(cs []health.Counter) *health.Counter {
	for i := range cs {
		if cs[i].Name == "port_xmit_wait" {
			return &cs[i]
		}
	}
	for i := range cs {
		if cs[i].LostGbps != 0 {
			return &cs[i]
		}
	}
	return nil
}

// unitName turns the view's rate suffix ("/sec", "/min", "/hour") into the
// velocityUnit word of the configuration, which is what an operator
// compares the rate with.
func unitName(suffix string) string {
	switch strings.TrimPrefix(suffix, "/") {
	case "sec":
		return "second"
	case "min":
		return "minute"
	case "hour":
		return "hour"
	}
	return strings.TrimPrefix(suffix, "/")
}
