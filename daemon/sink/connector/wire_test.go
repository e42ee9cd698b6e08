package connector

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/nichealth/nichealthd/event"
)

// The field numbers and wire types of DESIGN.md section 3, checked on the
// encoded bytes rather than through the generated code, so an edit of the
// .proto that renumbers a field (and silently breaks NVSentinel) fails here.
func TestConnector_3_WireFieldNumbers(t *testing.T) {
	e := linkDowned()
	e.ProcessingStrategy = event.StrategyStoreAndAnalyse
	h := ToProto(&e, "n")
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	want := map[protowire.Number]protowire.Type{
		1: protowire.VarintType, 2: protowire.BytesType, 3: protowire.BytesType, 4: protowire.BytesType,
		5: protowire.VarintType, 7: protowire.BytesType, 8: protowire.VarintType,
		9: protowire.BytesType, 10: protowire.BytesType, 11: protowire.BytesType, 12: protowire.BytesType,
		13: protowire.BytesType, 16: protowire.VarintType, 17: protowire.BytesType,
	}
	seen := map[protowire.Number]bool{}
	var action, strategy uint64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(n))
		}
		b = b[n:]
		if wt, ok := want[num]; !ok {
			t.Errorf("unexpected field %d on the wire", num)
		} else if wt != typ {
			t.Errorf("field %d has wire type %d, want %d", num, typ, wt)
		}
		seen[num] = true
		if typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(b)
			switch num {
			case 8:
				action = v
			case 16:
				strategy = v
			}
			n = m
		} else {
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			t.Fatalf("field %d: %v", num, protowire.ParseError(n))
		}
		b = b[n:]
	}
	for num := range want {
		if !seen[num] {
			t.Errorf("field %d missing on the wire", num)
		}
	}
	// isHealthy (6) is false and proto3 omits it; 14, 15 and 18 are unset.
	if action != 25 || strategy != 3 {
		t.Errorf("enum values on the wire: recommendedAction %d (want REPLACE_VM=25), processingStrategy %d (want STORE_AND_ANALYSE=3)", action, strategy)
	}
}
