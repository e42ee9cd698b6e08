package daemon

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/checks/health"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/nodecondition"
)

// asOlderBuild rewrites what this build said of a fatal counter breach as
// a build before seed 11.1's naming said it: under the degradation check
// of the NIC type.
func asOlderBuild(e event.Event) event.Event {
	if e.Kind != event.KindCounterBreach && e.Kind != event.KindCounterRecovered {
		return e
	}
	switch e.CheckName {
	case event.InfiniBandStateCheck:
		e.CheckName = event.InfiniBandDegradationCheck
	case event.EthernetStateCheck:
		e.CheckName = event.EthernetDegradationCheck
	}
	e.Condition.Check = e.CheckName
	return e
}

// downgradeStateFile rewrites the state file as the older build saved it:
// fatal latches and their health conditions under the degradation checks.
func downgradeStateFile(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]json.RawMessage
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	var sections map[string]json.RawMessage
	if err := json.Unmarshal(st["checks"], &sections); err != nil {
		t.Fatal(err)
	}
	var mem counters.Memory
	if err := json.Unmarshal(sections[counters.Section], &mem); err != nil {
		t.Fatal(err)
	}
	older := map[string]string{event.InfiniBandStateCheck: event.InfiniBandDegradationCheck, event.EthernetStateCheck: event.EthernetDegradationCheck}
	moved := 0
	for k, fl := range mem.BreachFlags {
		if o, ok := older[fl.CheckName]; ok {
			fl.CheckName = o
			mem.BreachFlags[k] = fl
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("no fatal latch in the state file to write as an older build would")
	}
	var conds []health.Condition
	if err := json.Unmarshal(st["health"], &conds); err != nil {
		t.Fatal(err)
	}
	for i := range conds {
		if o, ok := older[conds[i].Check]; ok && conds[i].Kind == event.KindCounterBreach {
			conds[i].Check = o
		}
	}
	set := func(m map[string]json.RawMessage, k string, v any) {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		m[k] = raw
	}
	set(sections, counters.Section, &mem)
	set(st, "checks", sections)
	set(st, "health", conds)
	out, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// DESIGN.md difference 2 as revised (issue 31 row 10): an upgrade from a
// build that reported fatal counter breaches under InfiniBandDegradationCheck.
// Its state file holds a latched fatal link_downed under that name, a
// latched non-fatal symbol_error, and a fatal PCIe AER condition that the
// degradation name still carries; NVSentinel holds what the older build
// told it. After the upgrade the latched link_downed is cleared under the
// old name (by its entities and counter) and raised under
// InfiniBandStateCheck, once; the AER condition stays where it is in
// NVSentinel and in the daemon; after every event NVSentinel agrees with
// the daemon; a restart moves nothing again, and the acknowledgement clears
// the moved breach under its new name.
func TestDesign_2_UpgradeMovesFatalCounterConditionsOnce(t *testing.T) {
	r := newReplayRig(t)
	h := r.h
	tick := 250 * time.Millisecond
	r.do("first polls", nil)
	r.run(2*time.Second, tick)
	r.do("a latched fatal link_downed on mlx5_1", h.AddCounter("mlx5_1", 1, "counters/link_downed", 1))
	r.do("a latched non-fatal symbol_error on mlx5_2", h.AddCounter("mlx5_2", 1, "counters/symbol_error", 5000))
	d0, _ := h.Device("mlx5_0")
	r.do("a fatal PCIe AER error on mlx5_0's function", h.AddAER(d0.PCIAddress, "fatal", "MalfTLP", 1))
	r.run(12*time.Second, tick)
	r.do("the older build stops", nil)
	r.close()

	// What the older build saved and told NVSentinel.
	downgradeStateFile(t, filepath.Join(r.dir, "state.json"))
	r.nvs, r.model, r.byID = nodecondition.New(), health.NewModel(), map[string]event.Event{}
	r.open()
	recs, err := r.d.ob.ReadAfter(0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if rec.Seq > r.seq {
			continue
		}
		e := asOlderBuild(rec.Event)
		r.byID[e.ID] = e
		r.nvs.Apply(nvsEvent(e))
		r.model.Apply(&e)
	}
	r.agree("the older build's stream")
	if !r.nvsHolds(event.InfiniBandDegradationCheck, "ErrorCode:link_downed NIC:mlx5_1 ") ||
		!r.nvsHolds(event.InfiniBandDegradationCheck, "ErrorCode:PCIE_AER_FATAL ") {
		t.Fatalf("before the upgrade NVSentinel holds %q", r.nvs.Messages(event.InfiniBandDegradationCheck))
	}

	r.do("the upgraded build's first polls", nil)
	before := r.seq
	r.run(2*time.Second, tick)
	moved := r.eventsAfter(before, func(e event.Event) bool { return e.Metadata["reason"] == counters.ReasonCheckRenamed })
	if len(moved) != 1 || moved[0].CheckName != event.InfiniBandDegradationCheck || moved[0].Device() != "mlx5_1" ||
		len(moved[0].ErrorCode) != 1 || moved[0].ErrorCode[0] != "link_downed" || len(moved[0].EntitiesImpacted) != 2 {
		t.Fatalf("the clears under the old name: %+v, want one for mlx5_1's link_downed, with its entities", moved)
	}
	raised := r.eventsAfter(before, kindOn("mlx5_1", event.KindCounterBreach))
	if len(raised) != 1 || raised[0].CheckName != event.InfiniBandStateCheck || !raised[0].IsFatal {
		t.Fatalf("the breach raised again: %+v, want one fatal under %s", raised, event.InfiniBandStateCheck)
	}
	if got := r.nvs.Messages(event.InfiniBandDegradationCheck); len(got) != 1 || !strings.Contains(got[0], "ErrorCode:PCIE_AER_FATAL ") {
		t.Fatalf("NVSentinel's %s after the upgrade: %q, want the AER condition alone", event.InfiniBandDegradationCheck, got)
	}
	if !r.nvsHolds(event.InfiniBandStateCheck, "ErrorCode:link_downed NIC:mlx5_1 NICPort:1 ") {
		t.Fatalf("NVSentinel's %s after the upgrade: %q", event.InfiniBandStateCheck, r.nvs.Messages(event.InfiniBandStateCheck))
	}

	r.do("a restart of the upgraded build", nil)
	r.close()
	r.open()
	before = r.seq
	r.run(2*time.Second, tick)
	if again := r.eventsAfter(before, func(e event.Event) bool {
		return e.Metadata["reason"] == counters.ReasonCheckRenamed || e.Kind == event.KindCounterBreach
	}); len(again) != 0 {
		t.Fatalf("moved again after a restart: %+v", again)
	}
	r.ack("mlx5_1", "link_downed")
	r.run(time.Second, tick)
	if r.nvsHolds(event.InfiniBandStateCheck, "NIC:mlx5_1 ") || r.nvsHolds(event.InfiniBandDegradationCheck, "NIC:mlx5_1 ") {
		t.Fatalf("after the acknowledgement NVSentinel holds %q and %q", r.nvs.Messages(event.InfiniBandStateCheck), r.nvs.Messages(event.InfiniBandDegradationCheck))
	}
}

// eventsAfter are the replayed events after seq that f matches.
func (r *replayRig) eventsAfter(seq uint64, f func(e event.Event) bool) []event.Event {
	r.t.Helper()
	recs, err := r.d.ob.ReadAfter(seq, 1<<20)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []event.Event
	for _, rec := range recs {
		if rec.Seq <= r.seq && f(rec.Event) {
			out = append(out, rec.Event)
		}
	}
	return out
}
