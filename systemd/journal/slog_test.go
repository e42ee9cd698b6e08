package journal

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdjournal "github.com/coreos/go-systemd/v22/journal"
)

func TestSlogHandler_FieldsPriorityAndMessage(t *testing.T) {
	rec := &recorder{}
	log := slog.New(newSlogHandler(slog.LevelDebug, rec.send))
	log = log.With("device", "mlx5_0").WithGroup("read")
	log.Warn("sysfs read timed out; keeping the last known state",
		"file", "/sys/class/infiniband/mlx5_0/ports/1/state",
		"after", 2*time.Second,
		slog.Group("retry", "attempt", 3),
		"err", errors.New("deadline exceeded"),
		"message", "shadow",
		"fix", "check dmesg for mlx5_core timeouts")

	if len(rec.entries) != 1 {
		t.Fatalf("%d entries, want 1", len(rec.entries))
	}
	e := rec.entries[0]
	if e.prio != sdjournal.PriWarning {
		t.Errorf("PRIORITY %d, want warning (4)", e.prio)
	}
	wantMsg := `sysfs read timed out; keeping the last known state device=mlx5_0 read.file=/sys/class/infiniband/mlx5_0/ports/1/state read.after=2s read.retry.attempt=3 read.err="deadline exceeded" read.message=shadow read.fix="check dmesg for mlx5_core timeouts"`
	if e.msg != wantMsg {
		t.Errorf("MESSAGE\n got %s\nwant %s", e.msg, wantMsg)
	}
	want := map[string]string{
		"SYSLOG_IDENTIFIER":  "nichealthd",
		"DEVICE":             "mlx5_0",
		"READ_FILE":          "/sys/class/infiniband/mlx5_0/ports/1/state",
		"READ_AFTER":         "2s",
		"READ_RETRY_ATTEMPT": "3",
		"READ_ERR":           "deadline exceeded",
		"READ_MESSAGE":       "shadow",
		"READ_FIX":           "check dmesg for mlx5_core timeouts",
	}
	for k, v := range want {
		if e.fields[k] != v {
			t.Errorf("%s = %q, want %q", k, e.fields[k], v)
		}
	}
	if !strings.HasSuffix(e.fields["CODE_FILE"], "slog_test.go") || e.fields["CODE_LINE"] == "" || e.fields["CODE_FUNC"] == "" {
		t.Errorf("call site fields missing: %v", e.fields)
	}
}

func TestSlogHandler_ReservedAttributesCannotOverride(t *testing.T) {
	rec := &recorder{}
	slog.New(newSlogHandler(nil, rec.send)).Info("x", "priority", "0", "message", "y", "syslog_identifier", "evil", "count", 1, "count", 2)
	f := rec.entries[0].fields
	if f["META_PRIORITY"] != "0" || f["META_MESSAGE"] != "y" || f["META_SYSLOG_IDENTIFIER"] != "evil" {
		t.Errorf("reserved attributes not prefixed: %v", f)
	}
	if f["SYSLOG_IDENTIFIER"] != "nichealthd" || rec.entries[0].prio != sdjournal.PriInfo {
		t.Errorf("attributes overrode the entry: %v prio %d", f, rec.entries[0].prio)
	}
	if f["COUNT"] != "1" || f["COUNT_2"] != "2" {
		t.Errorf("repeated key lost: %v", f)
	}
}

func TestSlogHandler_Levels(t *testing.T) {
	rec := &recorder{}
	h := newSlogHandler(slog.LevelInfo, rec.send)
	log := slog.New(h)
	log.Debug("hidden")
	log.Info("i")
	log.Warn("w")
	log.Error("e")
	log.Log(context.Background(), slog.LevelError+4, "worse")
	want := []sdjournal.Priority{sdjournal.PriInfo, sdjournal.PriWarning, sdjournal.PriErr, sdjournal.PriErr}
	if len(rec.entries) != len(want) {
		t.Fatalf("%d entries, want %d (debug filtered)", len(rec.entries), len(want))
	}
	for i, w := range want {
		if rec.entries[i].prio != w {
			t.Errorf("entry %q: PRIORITY %d, want %d", rec.entries[i].msg, rec.entries[i].prio, w)
		}
	}
	if got := levelPriority(slog.LevelDebug); got != sdjournal.PriDebug {
		t.Errorf("debug -> %d", got)
	}
	if h.WithGroup("") != h || h.WithAttrs(nil) != h {
		t.Error("empty WithGroup/WithAttrs should return the handler itself")
	}
}

func TestChooseLogHandler(t *testing.T) {
	rec := &recorder{}
	tests := []struct {
		name        string
		stream      bool
		streamErr   error
		enabled     bool
		wantJournal bool
	}{
		{"run by systemd", true, nil, true, true},
		{"shell", false, nil, true, false},
		{"journal stream but journald gone", true, nil, false, false},
		{"malformed JOURNAL_STREAM", false, errors.New("bad"), true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			h := chooseLogHandler(&buf, slog.LevelInfo,
				func() (bool, error) { return tc.stream, tc.streamErr },
				func() bool { return tc.enabled }, rec.send)
			_, isJournal := h.(*slogHandler)
			if isJournal != tc.wantJournal {
				t.Fatalf("journal handler = %v, want %v", isJournal, tc.wantJournal)
			}
			if !isJournal {
				slog.New(h).Info("hello", "device", "mlx5_0")
				if !strings.Contains(buf.String(), "msg=hello device=mlx5_0") {
					t.Errorf("text handler wrote %q", buf.String())
				}
			}
		})
	}
	// Outside systemd (as in this test run) the public function picks text.
	t.Setenv("JOURNAL_STREAM", "")
	var buf bytes.Buffer
	if _, ok := ChooseLogHandler(&buf, nil).(*slog.TextHandler); !ok {
		t.Error("ChooseLogHandler without JOURNAL_STREAM did not pick the text handler")
	}
}
