package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestValidationGapsNameFileKeyAndLine: values that used to be accepted,
// or refused without saying where, name the file, the key and its line.
func TestValidationGapsNameFileKeyAndLine(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, doc, key string
		line           int
		reason         string
	}{
		{"ConnectorTimeout1ns", "[sinks.connector]\nsocket = \"unix:///run/x.sock\"\ntimeout = \"1ns\"", "sinks.connector.timeout", 3, "10ms"},
		{"XmitWaitNaN", "# header\n[counterDetection]\nxmitWaitBytesPerTick = nan", "counterDetection.xmitWaitBytesPerTick", 3, "positive"},
		{"XmitWaitInf", "[counterDetection]\nxmitWaitBytesPerTick = inf", "counterDetection.xmitWaitBytesPerTick", 2, "positive"},
		{"XmitWaitZero", "[counterDetection]\nxmitWaitBytesPerTick = 0.0", "counterDetection.xmitWaitBytesPerTick", 2, "positive"},
		{"NodeNameNUL", "\n\nnodeName = \"gpu\\u0000node\"", "nodeName", 3, "control character"},
		{"NodeNameInvalidUTF8", "nodeName = \"gpu\xffnode\"", "", 0, "line 1 column"},
		{"JSONLPathDirectory", "[sinks.jsonl]\npath = \"" + dir + "\"", "sinks.jsonl.path", 2, "is a directory"},
		{"PollingIntervalInteger", "readTimeout = \"1s\"\npollingInterval = 5", "pollingInterval", 2, "quoted duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("/etc/nichealthd/config.toml", []byte(tc.doc))
			if err == nil {
				t.Fatalf("%q accepted", tc.doc)
			}
			msg := err.Error()
			want := "/etc/nichealthd/config.toml: " + tc.key
			if tc.line > 0 {
				want += ": line " + string(rune('0'+tc.line)) + ": "
			}
			if !strings.Contains(msg, want) || !strings.Contains(msg, tc.key) || !strings.Contains(msg, tc.reason) {
				t.Fatalf("message %q: want %q, key %q, reason %q", msg, want, tc.key, tc.reason)
			}
		})
	}
}

// TestLoadRefusesFilesThatAreNotRegular: a FIFO as the configuration file
// would block the reader forever, a symlink to /dev/zero would exhaust
// memory, a huge file is not a configuration: all are refused at once with
// the file named. A symlink to a regular file (ConfigMap) is read.
func TestLoadRefusesFilesThatAreNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.toml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", maxConfigBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, zero, big} {
		done := make(chan error, 1)
		go func() { _, err := Load(p); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), p) {
				t.Errorf("Load(%s) = %v, want a refusal naming the file", p, err)
			}
		case <-time.After(readDeadline + 5*time.Second):
			t.Fatalf("Load(%s) hung", p)
		}
	}
	real := filepath.Join(dir, "real.toml")
	if err := os.WriteFile(real, []byte("pollingInterval = \"2s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "config.toml")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	c, err := Load(link)
	if err != nil || c.PollInterval != 2*time.Second {
		t.Fatalf("Load through a symlink: %v %v", c, err)
	}
}
