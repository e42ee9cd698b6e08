package config

import (
	"strings"
	"testing"
)

// TestConfig_15_CableTransport: [cable] defaults to NCCL's 20/7 and
// refuses what no queue pair can use, naming the key, the range and why.
func TestConfig_15_CableTransport(t *testing.T) {
	c, err := Parse("c.toml", []byte(""))
	if err != nil || c.Cable.TransportTimeout != 20 || c.Cable.TransportRetries != 7 {
		t.Fatalf("defaults %+v %v, want 20/7", c.Cable, err)
	}
	c, err = Parse("c.toml", []byte("[cable]\ntransportTimeout = 14\ntransportRetries = 0\n"))
	if err != nil || c.Cable.TransportTimeout != 14 || c.Cable.TransportRetries != 0 {
		t.Fatalf("14/0: %+v %v", c.Cable, err)
	}
	c, err = Parse("c.toml", []byte("[cable]\ntransportTimeout = 0\ntransportRetries = 7\n"))
	if err != nil || c.Cable.TransportTimeout != 0 {
		t.Fatalf("0 (timer off) refused: %+v %v", c.Cable, err)
	}
	c, err = Parse("c.toml", []byte("[cable]\ntransportTimeout = 31\n"))
	if err != nil || c.Cable.TransportTimeout != 31 {
		t.Fatalf("31 refused: %+v %v", c.Cable, err)
	}
	for _, tc := range []struct{ body, key, want string }{
		{"[cable]\ntransportTimeout = 32\n", "cable.transportTimeout", "0..31"},
		{"[cable]\ntransportTimeout = -1\n", "cable.transportTimeout", "NCCL_IB_TIMEOUT"},
		{"[cable]\ntransportRetries = 8\n", "cable.transportRetries", "0..7"},
		{"[cable]\ntransportRetries = -1\n", "cable.transportRetries", "NCCL_IB_RETRY_CNT"},
		{"[cable]\ntransportTimeout = \"20\"\n", "transportTimeout", ""},
		{"[cable]\nretries = 7\n", "cable.retries", "unknown key"},
	} {
		_, err := Parse("c.toml", []byte(tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %s and %q", tc.body, err, tc.key, tc.want)
		}
	}
}
