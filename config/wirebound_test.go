package config

import (
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/mad/wire"
)

// TestFarEnd_40_12_TimeoutBoundedAsTheWireIs: [farEnd] timeout and
// [fabric] timeout are the budget of one request to nichealth-mad, which
// carries it as whole milliseconds up to 60000 (60 s, a literal here): the
// largest accepted is one the wire takes, and any budget it cannot carry
// is refused when the file is read, not by every request at run time.
func TestFarEnd_40_12_TimeoutBoundedAsTheWireIs(t *testing.T) {
	for _, table := range []string{"farEnd", "fabric"} {
		doc := "[" + table + "]\ninterval = \"5m\"\ntimeout = \"60s\"\n"
		c, err := Parse("c.toml", []byte(doc))
		if err != nil {
			t.Fatalf("%s: the largest budget refused: %v", table, err)
		}
		d := c.FarEnd.Timeout
		if table == "fabric" {
			d = c.Fabric.Timeout
		}
		if d != 60*time.Second {
			t.Fatalf("%s.timeout = %v", table, d)
		}
		req := wire.Request{ID: 1, Op: wire.OpPortCounters, TimeoutMS: int(d / time.Millisecond), Local: &wire.Local{CA: "mlx5_0", Port: 1}, LID: 1, PortNum: 1}
		if err := req.Validate(); err != nil {
			t.Fatalf("%s: the accepted %v does not go on the wire: %v", table, d, err)
		}
		for _, tc := range []struct{ v, want string }{
			{"60001ms", "must be 10ms..1m0s"},
			{"61s", "must be 10ms..1m0s"},
			{"9ms", "must be 10ms..1m0s"},
			{"10500us", "not a whole number of milliseconds"},
		} {
			_, err := Parse("c.toml", []byte("["+table+"]\ninterval = \"5m\"\ntimeout = \""+tc.v+"\"\n"))
			if err == nil || !strings.Contains(err.Error(), table+".timeout: line 3: ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s.timeout = %s: %v, want %q", table, tc.v, err, tc.want)
			}
		}
	}
}
