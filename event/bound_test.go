package event

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// Issue 22 row 3: a 200 KB description of "<" escaped to 1.2 MB of JSON,
// above the outbox's 1 MiB record limit, and that one record held back
// every event behind it. Every part of an event is bounded when it is
// built, whatever the check put in its spec, and says what was cut.
func TestBounded_3_EventFitsAtConstruction(t *testing.T) {
	md := map[string]string{"big": strings.Repeat("<", 1<<20), strings.Repeat("k", 300): "v"}
	for i := 0; i < 5000; i++ {
		md[fmt.Sprintf("key%05d", i)] = strings.Repeat("&", 3000)
	}
	var codes []string
	for i := 0; i < 1000; i++ {
		codes = append(codes, strings.Repeat("e", 1000))
	}
	var ports []PortRef
	for i := 0; i < 100_000; i++ {
		ports = append(ports, PortRef{Device: fmt.Sprintf("mlx5_%d", i), Port: 1})
	}
	spec := Spec{Kind: KindCounterBreach, CheckName: strings.Repeat("C", 10_000), Message: strings.Repeat("<", 200_000),
		Device: strings.Repeat("d", 10_000), Port: 1, ErrorCode: codes, Ports: ports, Card: "0000:3b:00", Metadata: md}
	e := New(spec, Stamp{NodeName: strings.Repeat("n", 10_000), Now: time.Now()})
	b, err := json.Marshal(&e)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 512<<10 {
		t.Fatalf("event encodes to %d bytes", len(b))
	}
	if len(e.Message) > MaxMessageBytes || !strings.Contains(e.Message, "[truncated ") || !utf8.ValidString(e.Message) {
		t.Fatalf("message %d bytes, ends %q", len(e.Message), e.Message[max(0, len(e.Message)-40):])
	}
	if len(e.Metadata) > MaxMetadataKeys+2 || e.Metadata["truncated"] == "" || e.Metadata["card"] == "" {
		t.Fatalf("%d metadata keys, truncated=%q card=%q", len(e.Metadata), e.Metadata["truncated"], e.Metadata["card"])
	}
	if len(e.ErrorCode) > 16 || len(e.EntitiesImpacted) > 1024 || e.Metadata["portsLeftOut"] == "" {
		t.Fatalf("%d error codes, %d entities, portsLeftOut %q", len(e.ErrorCode), len(e.EntitiesImpacted), e.Metadata["portsLeftOut"])
	}
	if len(md) != 5002 || len(md["big"]) != 1<<20 || len(codes[0]) != 1000 {
		t.Fatal("New modified the spec's metadata or error codes")
	}
}

func FuzzTruncate(f *testing.F) {
	f.Add("héllo wörld", 8)
	f.Add(strings.Repeat("€", 100), 40)
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = 40 + n%5000
		if n < 40 {
			n += 5000
		}
		got := Truncate(s, n)
		if len(got) > n {
			t.Fatalf("Truncate(%d bytes, %d) = %d bytes", len(s), n, len(got))
		}
		if len(s) <= n && got != s {
			t.Fatalf("a string that fits was changed")
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("cut inside a rune: %q", got)
		}
	})
}
