package kernellog

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/config/patterntable"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology/kmsg"
)

// stormRecords are n fatal command-timeout records, each naming another
// PCI function discovery does not know (a nic-or-node pattern raises on
// such a function), in the kernel's own dictionary and prefix.
func stormRecords(n int, first uint64) []kmsg.Record {
	recs := make([]kmsg.Record, n)
	for i := range recs {
		pci := fmt.Sprintf("0000:%02x:%02x.%d", 0x80+i/(32*8)%0x70, i/8%32, i%8)
		recs[i] = kmsg.Record{Seq: first + uint64(i), Level: 3, Time: t0, Subsystem: "pci", Device: "+pci:" + pci,
			Message: "mlx5_core " + pci + ": wait_func:1176:(pid 1): ENABLE_HCA(0x104) timeout. Will cause a leak of a command resource"}
	}
	return recs
}

// TestBounded_2_StormOfFunctionsKeepsTheMemoryFlat: records naming ten
// times more distinct functions than the check keeps, fed while running,
// leave at most 16 functions' conditions (256 in all, 16 per function)
// plus one overflow condition counting the rest, fatal since the records
// were; the events stay one per kept condition and one for the overflow,
// and the state section stays the same size whether the storm is ten or
// a hundred times past the bound.
func TestBounded_2_StormOfFunctionsKeepsTheMemoryFlat(t *testing.T) {
	c, mem := newCheck(t, false), NewMemory()
	devs := devices()
	var specs []event.Spec
	const bound = 16
	recs := stormRecords(10*bound, 1)
	for i := 0; i < len(recs); i += 7 { // several cycles' batches
		s, _ := c.Judge(mem, recs[i:min(i+7, len(recs))], devs, t0)
		specs = append(specs, s...)
	}
	if len(mem.Active) != bound+1 {
		t.Fatalf("%d conditions after %d functions, want %d and the overflow", len(mem.Active), 10*bound, bound)
	}
	o := mem.Active[Key(patterntable.Overflow, "")]
	if o == nil || !o.Raised || !o.Fatal || o.Count != 10*bound-bound {
		t.Fatalf("overflow %+v, want raised, fatal, counting %d records", o, 10*bound-bound)
	}
	if st := c.Stats(); st.Overflow != 10*bound-bound {
		t.Errorf("overflow counted %d", st.Overflow)
	}
	if len(specs) != bound+1 {
		t.Errorf("%d events, want one per kept condition and one for the overflow", len(specs))
	}
	small, _ := json.Marshal(mem)

	// A hundred times past the bound: the same memory, the same size.
	more := stormRecords(100*bound, 10000)
	for i := 0; i < len(more); i += 1024 {
		c.Judge(mem, more[i:min(i+1024, len(more))], devs, t0)
	}
	big, _ := json.Marshal(mem)
	if len(mem.Active) != bound+1 || len(big) > len(small)+64 {
		t.Fatalf("%d conditions, state section %d bytes (was %d)", len(mem.Active), len(big), len(small))
	}
	if len(big) > 64<<10 {
		t.Errorf("state section %d bytes", len(big))
	}
}

// TestBounded_2_ConditionsPerFunctionAndInAll: one monitored function
// matching six times more patterns than it may have conditions keeps 16; the rest count on the
// overflow condition, and another function still gets its own.
func TestBounded_2_ConditionsPerFunctionAndInAll(t *testing.T) {
	var overrides []patterntable.Override
	for i := 0; i < 6*MaxPerFunction; i++ {
		overrides = append(overrides, patterntable.Override{Name: sp(fmt.Sprintf("storm_%03d", i)),
			Regex: sp(fmt.Sprintf(`^mlx5_core .*storm word %03d$`, i)), Severity: sp("non-fatal")})
	}
	c, mem := newCheck(t, false, overrides...), NewMemory()
	var recs []kmsg.Record
	for i := 0; i < 6*MaxPerFunction; i++ {
		recs = append(recs, rec(fmt.Sprintf("mlx5_core 0000:3b:00.0: storm word %03d", i), dict("0000:3b:00.0")))
	}
	c.Judge(mem, recs, devices(), t0)
	per := 0
	for _, a := range mem.Active {
		if a.PCI == "0000:3b:00.0" {
			per++
		}
	}
	o := mem.Active[Key(patterntable.Overflow, "")]
	if per != MaxPerFunction || o == nil || o.Fatal || o.Count != uint64(5*MaxPerFunction) {
		t.Fatalf("%d conditions on the function, overflow %+v", per, o)
	}
	c.Judge(mem, []kmsg.Record{rec("mlx5_core 0000:3c:00.0: storm word 000", dict("0000:3c:00.0"))}, devices(), t0)
	if mem.Active[Key("storm_000", "0000:3c:00.0")] == nil {
		t.Fatal("another function's condition was refused")
	}
}

// TestBounded_3_RestoredPastTheBoundsAgreesWithTheModel: a state section
// holding more conditions than the check keeps (an older build's) no
// longer starts the check with none: the raised fatal ones are kept
// first, the rest are cleared at start with one overflow condition
// counting them, so the events bring the health model to what the memory
// holds; a kept condition stays acknowledgeable by kernel_log and a
// repeated record is no new raise.
func TestBounded_3_RestoredPastTheBoundsAgreesWithTheModel(t *testing.T) {
	old := NewMemory()
	for i := 0; i < 2*MaxConditions; i++ {
		pci := fmt.Sprintf("0000:%02x:00.%d", 0x10+i/8, i%8)
		old.Active[Key("cmd_exec_timeout", pci)] = &Active{Pattern: "cmd_exec_timeout", PCI: pci, Raised: true, Fatal: true,
			Count: 1, ReportedCount: 1, First: t0, Last: t0, Reported: t0}
	}
	// The monitored mlx5_0 among them.
	old.Active[Key("cmd_exec_timeout", "0000:3b:00.0")] = &Active{Pattern: "cmd_exec_timeout", PCI: "0000:3b:00.0", Device: "mlx5_0",
		Ports: []Port{{Device: "mlx5_0", Port: 1}}, Raised: true, Fatal: true, Count: 1, ReportedCount: 1, First: t0, Last: t0, Reported: t0}
	raw, _ := json.Marshal(old)

	w := NewWatch(nil, "", nil)
	w.Configure(Config{On: true, Patterns: mustMerge(t)})
	if dropped := w.Restore(raw); len(dropped) != 1 {
		t.Fatalf("restore said %q", dropped)
	}
	mem := w.Memory()
	if len(mem.Active) == 0 {
		t.Fatal("the check starts with none")
	}
	specs := w.Start(t0.Add(time.Minute))
	// The model had every condition of the old memory; apply the start's
	// events to that set.
	model := map[string]bool{}
	for k := range old.Active {
		model[k] = true
	}
	for _, s := range specs {
		k := Key(s.Metadata["pattern"], s.Metadata["pci"])
		switch s.Kind {
		case event.KindKernelLogCleared:
			delete(model, k)
		case event.KindKernelLog:
			model[k] = true
		}
	}
	if len(model) != len(mem.Active) {
		t.Fatalf("model %d conditions, memory %d", len(model), len(mem.Active))
	}
	for k := range model {
		if mem.Active[k] == nil || !mem.Active[k].Raised {
			t.Fatalf("model holds %s, the memory does not", k)
		}
	}
	o := mem.Active[Key(patterntable.Overflow, "")]
	if o == nil || !o.Fatal || int(o.Count) != len(old.Active)-(len(mem.Active)-1) {
		t.Fatalf("overflow %+v", o)
	}
	// A repeated record of a kept condition: no new raise (de-duplicated).
	cy := w.check
	if s, _ := cy.Judge(mem, []kmsg.Record{rec("mlx5_core 0000:3b:00.0: wait_func:1176:(pid 1): ENABLE_HCA(0x104) timeout. Will cause a leak of a command resource", dict("0000:3b:00.0"))}, devices(), t0.Add(2*time.Minute)); len(s) != 0 {
		t.Fatalf("a repeated record raised again: %+v", s)
	}
	// kernel_log clears the port's condition and the overflow.
	acks, ok := w.Acknowledge("mlx5_0", 1, patterntable.AckAll, "uid 0")
	if !ok || len(acks) != 2 {
		t.Fatalf("ack kernel_log: %d events, ok %v", len(acks), ok)
	}
	if mem.Active[Key("cmd_exec_timeout", "0000:3b:00.0")] != nil || mem.Active[Key(patterntable.Overflow, "")] != nil {
		t.Fatal("acknowledged conditions still held")
	}
}

// TestBounded_3_ModelConditionsTheMemoryLacksAreTakenOn: the health model
// restored a latched kernel-log condition the check's section did not
// have (unreadable, or dropped by an older build): the check takes it on,
// so kernel_log acknowledges it and a repeated record is no duplicate.
func TestBounded_3_ModelConditionsTheMemoryLacksAreTakenOn(t *testing.T) {
	w := NewWatch(nil, "", nil)
	w.Configure(Config{On: true, Patterns: mustMerge(t)})
	w.Restore([]byte("{not json"))
	w.Adopt([]Held{{Pattern: "cmd_exec_timeout", PCI: "0000:3b:00.0", Ports: []Port{{Device: "mlx5_0", Port: 1}}, Fatal: true, Since: t0}})
	if specs := w.Start(t0); len(specs) != 0 {
		t.Fatalf("start said %+v", specs)
	}
	if s, _ := w.check.Judge(w.Memory(), []kmsg.Record{rec("mlx5_core 0000:3b:00.0: wait_func:1176:(pid 1): ENABLE_HCA(0x104) timeout. Will cause a leak of a command resource", dict("0000:3b:00.0"))}, devices(), t0.Add(time.Minute)); len(s) != 0 {
		t.Fatalf("a repeated record raised a duplicate: %+v", s)
	}
	acks, ok := w.Acknowledge("mlx5_0", 1, patterntable.AckAll, "uid 0")
	if !ok || len(acks) != 1 || acks[0].Kind != event.KindKernelLogCleared {
		t.Fatalf("ack kernel_log: %+v ok %v (the operator was told: no latched breach)", acks, ok)
	}
}

// TestBounded_5_JudgingWithinAWorkBudget: a table of 90 patterns without
// literals (each runs its regex over every record) judges a batch over
// several cycles within the work budget, counted in work units, not
// time: each cycle stops once its budget is spent, carries the rest, the
// cursor covers only what was judged, the observer is asked for no more
// than the room left, and every record is judged once in the end.
func TestBounded_5_JudgingWithinAWorkBudget(t *testing.T) {
	var overrides []patterntable.Override
	for i := 0; i < 90; i++ {
		overrides = append(overrides, patterntable.Override{Name: sp(fmt.Sprintf("slow_%03d", i)),
			Regex: sp(fmt.Sprintf(`(a|b)+.*z%03d`, i)), Severity: sp("non-fatal")})
	}
	c, mem := newCheck(t, false, overrides...), NewMemory()
	const budget = 1 << 20
	recs := make([]kmsg.Record, 1024)
	for i := range recs {
		recs[i] = rec(fmt.Sprintf("mlx5_core 0000:3b:00.0: %0200d", i))
	}
	var judged, cycles int
	left := recs
	for len(left) > 0 {
		before := c.Stats().Work
		_, _, n := c.JudgeWithin(mem, left, devices(), t0, budget)
		work := c.Stats().Work - before
		// One record's work past the budget at most: a record is judged
		// whole.
		if perRecord := work / uint64(n); work > budget+perRecord {
			t.Fatalf("cycle %d: %d work units for %d records, budget %d", cycles, work, n, budget)
		}
		if mem.Seq != left[n-1].Seq {
			t.Fatalf("cursor %d, last judged %d", mem.Seq, left[n-1].Seq)
		}
		judged += n
		left = left[n:]
		cycles++
	}
	if judged != len(recs) || cycles < 4 {
		t.Fatalf("%d records judged in %d cycles", judged, cycles)
	}
	if st := c.Stats(); st.Judged != uint64(len(recs)) {
		t.Fatalf("judged %d", st.Judged)
	}
}

func sp(s string) *string { return &s }

func mustMerge(t *testing.T) []patterntable.Pattern {
	t.Helper()
	ps, err := patterntable.Merge(patterntable.Defaults(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// BenchmarkStorm_Memory judges a storm of 30,000 fatal records naming
// 30,000 different functions: the memory it keeps (B/op is what judging
// allocates; the state and conditions figures are what stays).
func BenchmarkStorm_Memory(b *testing.B) {
	ps, _ := patterntable.Merge(patterntable.Defaults(), nil)
	tb, _ := Compile(ps)
	recs := stormRecords(30000, 1)
	devs := devices()
	b.ReportAllocs()
	var state int
	var conds int
	for i := 0; i < b.N; i++ {
		c, mem := New(tb, Options{}), NewMemory()
		for j := 0; j < len(recs); j += 1024 {
			c.Judge(mem, recs[j:min(j+1024, len(recs))], devs, t0)
		}
		raw, _ := json.Marshal(mem)
		state, conds = len(raw), len(mem.Active)
	}
	b.ReportMetric(float64(state), "state-bytes")
	b.ReportMetric(float64(conds), "conditions")
}
