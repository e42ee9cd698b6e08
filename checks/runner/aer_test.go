package runner

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/aer"
	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/persist"
	"github.com/nichealth/nichealthd/topology/sim"
	"github.com/nichealth/nichealthd/topology/sim/simtest"
)

// aerInterval is the cadence of the PCIe AER reads (observe).
const aerInterval = 5 * time.Second

// aerMonitor is a discovered runner on h over the memory of st (nil:
// none), logging into the returned buffer.
func aerMonitor(t *testing.T, h *sim.Host, st *persist.State, boot persist.BootStatus) (*Runner, *logBuf) {
	t.Helper()
	lb := &logBuf{}
	m := startRunner(t, perfConfig(t, h), st, boot, slog.New(slog.NewTextHandler(lb, nil)), Seams{})
	return m, lb
}

var aerT0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// aerSpecs runs one cycle at now and returns its AER specs.
func aerSpecs(m *Runner, now time.Time) []event.Spec {
	specs, _ := m.Cycle(now)
	var out []event.Spec
	for _, s := range specs {
		if s.Kind == event.KindPCIeAER || s.Kind == event.KindPCIeAERRecovered {
			out = append(out, s)
		}
	}
	return out
}

func TestAER_FatalErrorOnSwitchPort(t *testing.T) {
	h := simtest.Build(t, "h100-oci")
	m, _ := aerMonitor(t, h, nil, persist.BootFresh)
	if s := aerSpecs(m, aerT0); len(s) != 0 {
		t.Fatalf("first sight raised %+v", s)
	}
	sw, err := h.AERAbove("mlx5_0")
	if err != nil {
		t.Fatal(err)
	}
	if err := h.AddAER(sw, "fatal", "MalfTLP", 1); err != nil {
		t.Fatal(err)
	}
	s := aerSpecs(m, aerT0.Add(aerInterval))
	if len(s) != 1 || !s[0].IsFatal || s[0].Metadata["pci"] != sw || s[0].Metadata["aer"] != "fatal" ||
		!strings.Contains(s[0].Message, "PCIe AER on "+sw+" (switch port above mlx5_0, mlx5_1): uncorrectable fatal errors MalfTLP +1") ||
		!strings.Contains(s[0].Message, "reseat or replace the card") {
		t.Fatalf("got %+v", s)
	}
	want := []event.PortRef{{Device: "mlx5_0", Port: 1}, {Device: "mlx5_1", Port: 1}}
	if len(s[0].Ports) != 2 || s[0].Ports[0] != want[0] || s[0].Ports[1] != want[1] {
		t.Errorf("ports %+v, want %+v", s[0].Ports, want)
	}
	if s := aerSpecs(m, aerT0.Add(time.Hour)); len(s) != 0 {
		t.Fatalf("fatal did not stay: %+v", s)
	}
	if err := h.ResetAER(sw); err != nil {
		t.Fatal(err)
	}
	if s := aerSpecs(m, aerT0.Add(time.Hour+aerInterval)); len(s) != 1 || !s[0].IsHealthy || s[0].Metadata["pci"] != sw {
		t.Fatalf("reset counters: %+v", s)
	}
}

func TestAER_NonFatalOnNICFunctionClearsAfterQuiet(t *testing.T) {
	h := simtest.Build(t, "dgx-h100")
	m, _ := aerMonitor(t, h, nil, persist.BootFresh)
	aerSpecs(m, aerT0)
	nic, _ := h.Device("mlx5_3")
	if err := h.AddAER(nic.PCIAddress, "nonfatal", "CmpltTO", 2); err != nil {
		t.Fatal(err)
	}
	s := aerSpecs(m, aerT0.Add(aerInterval))
	if len(s) != 1 || s[0].IsFatal || !strings.Contains(s[0].Message, "(NIC function mlx5_3): uncorrectable non-fatal errors CmpltTO +2") ||
		s[0].CheckName != event.InfiniBandDegradationCheck {
		t.Fatalf("got %+v", s)
	}
	if s := aerSpecs(m, aerT0.Add(aerInterval+m.cfg.PCIeAER.NonFatalQuiet)); len(s) != 1 || !s[0].IsHealthy {
		t.Fatalf("after the quiet period: %+v", s)
	}
}

func TestAER_SharedHopReadOnce(t *testing.T) {
	h := simtest.Build(t, "dgx-h100")
	m, _ := aerMonitor(t, h, nil, persist.BootFresh)
	seen := map[string]bool{}
	for _, a := range m.obs.AER() {
		if seen[a.Address] {
			t.Errorf("%s planned twice", a.Address)
		}
		seen[a.Address] = true
	}
	// 8 compute NICs behind a switch (NIC, 2 switch ports, root port) and
	// 2 storage cards of two functions below one root port each; three
	// files per function and three more per root port (10).
	if st := m.obs.Stats(); st.AERFunctions != 8*4+2*3 || st.AERFiles != 3*st.AERFunctions+3*10 {
		t.Errorf("%d functions, %d files", st.AERFunctions, st.AERFiles)
	}
	rp, _ := h.AERAbove("mlx5_8")
	for _, a := range m.obs.AER() {
		if a.Address == rp && (a.Label != "root port above mlx5_8, mlx5_9" || len(a.Ports) != 2) {
			t.Errorf("root port %+v", a)
		}
	}
}

// A restart (same boot) reports the errors counted while the daemon was
// down; a reboot starts from a baseline.
func TestAER_RestartAndReboot(t *testing.T) {
	h := simtest.Build(t, "dgx-h100")
	m, _ := aerMonitor(t, h, nil, persist.BootFresh)
	aerSpecs(m, aerT0)
	st := persist.NewState("11111111-2222-3333-4444-555555555555")
	if err := storeMemory(st, m); err != nil {
		t.Fatal(err)
	}
	m.Close()
	sw, _ := h.AERAbove("mlx5_0")
	if err := h.AddAER(sw, "nonfatal", "DLP", 4); err != nil {
		t.Fatal(err)
	}
	m2, _ := aerMonitor(t, h, st, persist.ApplyBoot(st, "11111111-2222-3333-4444-555555555555"))
	if s := aerSpecs(m2, aerT0.Add(time.Hour)); len(s) != 1 || s[0].Metadata["moved"] != "DLP +4" || s[0].Metadata["pci"] != sw {
		t.Fatalf("restart: %+v", s)
	}
	if err := storeMemory(st, m2); err != nil {
		t.Fatal(err)
	}
	if err := h.AddAER(sw, "fatal", "DLP", 1); err != nil {
		t.Fatal(err)
	}
	boot := persist.ApplyBoot(st, "99999999-2222-3333-4444-555555555555")
	m3, _ := aerMonitor(t, h, st, boot)
	if s := aerSpecs(m3, aerT0.Add(2*time.Hour)); boot != persist.BootRebooted || len(s) != 0 {
		t.Fatalf("reboot (%v) raised %+v", boot, s)
	}
	if fm := m3.set.aer.Memory().Functions[sw]; fm == nil || fm.Totals[2] != 1 {
		t.Fatalf("reboot baseline %+v", fm)
	}
}

func TestAER_AbsentLoggedOnce(t *testing.T) {
	h := simtest.BuildWith(t, "minimal", sim.BuildOptions{NoAER: true})
	m, lb := aerMonitor(t, h, nil, persist.BootFresh)
	for i := 0; i < 3; i++ {
		if s := aerSpecs(m, aerT0.Add(time.Duration(i)*aerInterval)); len(s) != 0 {
			t.Fatalf("absent AER raised %+v", s)
		}
	}
	m.Reconfigure(m.cfg, aerT0.Add(time.Hour)) // the plan is built again
	aerSpecs(m, aerT0.Add(time.Hour))
	// minimal: NIC function, switch downstream and upstream port, root port.
	if n := strings.Count(lb.String(), "no PCIe AER counters"); n != 4 {
		t.Errorf("logged %d times, want once per function (4):\n%s", n, lb.String())
	}
}

func TestAER_MalformedFileLoggedOnce(t *testing.T) {
	h := simtest.Build(t, "minimal")
	m, lb := aerMonitor(t, h, nil, persist.BootFresh)
	nic, _ := h.Device("mlx5_0")
	if err := h.AddAER(nic.PCIAddress, "correctable", "BadTLP", 1); err != nil {
		t.Fatal(err)
	}
	if err := h.WriteAER(nic.PCIAddress, "correctable", "RxErr 0\nBadTLP x\nTOTAL_ERR_COR 1\n"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		aerSpecs(m, aerT0.Add(time.Duration(i)*aerInterval))
	}
	if n := strings.Count(lb.String(), "malformed lines"); n != 1 || !strings.Contains(lb.String(), "value is not a decimal count") {
		t.Errorf("logged %d times:\n%s", n, lb.String())
	}
}

// BenchmarkAER_Cycle_dgxH100 is one AER read of the whole plan (every
// function on the monitored NICs' paths, three files each), parsed and
// judged, in steady state: what the 5 s AER cadence adds.
func BenchmarkAER_Cycle_dgxH100(b *testing.B) { benchAER(b, false) }

// BenchmarkAER_Cycle_dgxH100_KeepOpen is the same read with descriptors
// kept open, as on real sysfs.
func BenchmarkAER_Cycle_dgxH100_KeepOpen(b *testing.B) { benchAER(b, true) }

// The cycles between two AER reads do nothing else: the state poll is an
// hour apart (one in 720 reads, within the noise), counters, the link
// sanity pass and the PCI inventory (whose scan would ride on that poll)
// are off.
func benchAER(b *testing.B, keepOpen bool) {
	h, err := sim.Build(b.TempDir(), "dgx-h100")
	if err != nil {
		b.Fatal(err)
	}
	m := perfMonitorWith(b, h, keepOpen, "pollingInterval = \"1h\"\n[counterDetection]\nenabled = false\n[linkSanity]\nenabled = false\n[inventory]\nenabled = false\n")
	now := perfWarm(m, aerT0, perfWarmCycles)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(aerInterval)
		m.Cycle(now)
	}
	if b.N > 0 {
		st := m.obs.Stats()
		ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		b.ReportMetric(ns/float64(st.Ports), "ns/port")
		b.ReportMetric(ns/float64(st.AERFiles), "ns/file")
		b.ReportMetric(float64(st.AERFiles), "files")
	}
}

// AcknowledgeReset with counter pcie_aer clears the uncorrectable AER
// conditions on the port's path; with nothing raised it says so.
func TestAER_AcknowledgeResetClearsThePath(t *testing.T) {
	h := simtest.Build(t, "minimal")
	m, _ := aerMonitor(t, h, nil, persist.BootFresh)
	aerSpecs(m, aerT0)
	if _, err := m.Acknowledge("mlx5_0", 1, aer.AckCounter, aerT0, "uid 0"); !errors.Is(err, counters.ErrNotLatched) {
		t.Fatalf("nothing raised: %v", err)
	}
	rp, _ := h.AERAbove("mlx5_0")
	if err := h.AddAER(rp, "fatal", "DLP", 1); err != nil {
		t.Fatal(err)
	}
	if s := aerSpecs(m, aerT0.Add(aerInterval)); len(s) != 1 || !s[0].IsFatal {
		t.Fatalf("raise %+v", s)
	}
	specs, err := m.Acknowledge("mlx5_0", 1, aer.AckCounter, aerT0, "uid 0")
	if err != nil || len(specs) != 1 || !specs[0].IsHealthy || specs[0].Metadata["pci"] != rp {
		t.Fatalf("ack: %+v %v", specs, err)
	}
	if s := aerSpecs(m, aerT0.Add(2*aerInterval)); len(s) != 0 {
		t.Fatalf("acknowledged error raised again: %+v", s)
	}
}

// A reload switching [pcieAER] off clears what it raised, and the
// thresholds of a reload apply at the next read.
func TestAER_ReloadSwitchedOffClearsConditions(t *testing.T) {
	h := simtest.Build(t, "minimal")
	m, _ := aerMonitor(t, h, nil, persist.BootFresh)
	aerSpecs(m, aerT0)
	nic, _ := h.Device("mlx5_0")
	if err := h.AddAER(nic.PCIAddress, "nonfatal", "UnsupReq", 1); err != nil {
		t.Fatal(err)
	}
	if s := aerSpecs(m, aerT0.Add(aerInterval)); len(s) != 1 {
		t.Fatalf("raise %+v", s)
	}
	cfg := *m.cfg
	cfg.PCIeAER.Enabled = false
	m.Reconfigure(&cfg, aerT0.Add(2*aerInterval))
	s := aerSpecs(m, aerT0.Add(2*aerInterval))
	if len(s) != 1 || !s[0].IsHealthy || !strings.Contains(s[0].Message, "pcieAER.enabled = false") {
		t.Fatalf("switched off: %+v", s)
	}
	if n := m.obs.Stats().AERFiles; n != 0 {
		t.Errorf("switched off but %d AER files planned", n)
	}
}

// /metrics shows each planned function's totals and, for root ports,
// what they received from below.
func TestAER_MetricsTotals(t *testing.T) {
	h := simtest.Build(t, "minimal")
	m, _ := aerMonitor(t, h, nil, persist.BootFresh)
	nic, _ := h.Device("mlx5_0")
	if err := h.AddAER(nic.PCIAddress, "correctable", "BadTLP", 7); err != nil {
		t.Fatal(err)
	}
	aerSpecs(m, aerT0)
	var root string
	for _, a := range m.obs.AER() {
		if a.Label == "root port above mlx5_0" {
			root = a.Address
		}
	}
	if err := h.AddAER(root, "nonfatal", "DLP", 3); err != nil {
		t.Fatal(err)
	}
	aerSpecs(m, aerT0.Add(aerInterval))
	got := map[string]uint64{}
	for _, tt := range m.AERTotals() {
		got[fmt.Sprintf("%s %s %v", tt.PCI, tt.Severity, tt.RootPort)] = tt.Total
	}
	// 4 functions x 3 classes, plus the root port's 3 received totals.
	if len(got) != 15 || got[nic.PCIAddress+" correctable false"] != 7 || got[root+" nonfatal false"] != 3 || got[root+" nonfatal true"] != 3 {
		t.Errorf("totals %v", got)
	}
}

// TestAER_TotalsMovingRepublishTheSnapshot: a correctable error below the
// rate threshold raises nothing, but the totals /metrics shows come from
// the published snapshot, so moving them must mark the view changed (a
// quiet poll does not rebuild the snapshot otherwise); an AER read that
// moved nothing leaves it unchanged.
func TestAER_TotalsMovingRepublishTheSnapshot(t *testing.T) {
	h := simtest.Build(t, "minimal")
	m, _ := aerMonitor(t, h, nil, persist.BootFresh)
	now := aerT0
	for i := 0; i < 3; i++ { // the first cycles plan and rate every counter
		aerSpecs(m, now)
		m.TakeViewChanged()
		now = now.Add(aerInterval)
	}
	aerSpecs(m, now)
	if m.TakeViewChanged() {
		t.Fatal("an AER read that moved nothing changed the view")
	}
	nic, _ := h.Device("mlx5_0")
	if err := h.AddAER(nic.PCIAddress, "correctable", "BadTLP", 1); err != nil {
		t.Fatal(err)
	}
	now = now.Add(aerInterval)
	if s := aerSpecs(m, now); len(s) != 0 {
		t.Fatalf("one correctable error raised %+v", s)
	}
	if !m.TakeViewChanged() {
		t.Fatal("a moved AER total did not change the view: /metrics would show the old count")
	}
}
