package journal

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/event"

	"github.com/nichealth/nichealthd/internal/component"
)

// helperEnv makes the test binary, re-executed inside the private mount
// namespace, write the sample events and exit instead of running tests.
const helperEnv = "NICHEALTH_JOURNAL_WRITER"

const journaldBin = "/lib/systemd/systemd-journald"

// bigValue exceeds a unix datagram, so the memfd path of the native
// protocol is exercised too.
const bigValueLen = 300 << 10

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		if err := writeSamples(); err != nil {
			fmt.Fprintln(os.Stderr, "journal writer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func sampleEvents() []event.Event {
	recovered := event.New(event.Spec{
		Kind: event.KindPortRecovered, CheckName: event.InfiniBandStateCheck, IsHealthy: true,
		Message: "Port mlx5_0 port 1: healthy (ACTIVE, LinkUp)", Device: "mlx5_0", Port: 1,
	}, stamp)
	nonFatal := counterBreach("mlx5_0", false, "symbol_error")
	nonFatal.Metadata["note"] = "line one\nline two"
	big := counterBreach("mlx5_2", false, "port_xmit_wait")
	big.Metadata["dump"] = strings.Repeat("x", bigValueLen)
	return []event.Event{
		portFatal(),
		counterBreach("mlx5_0", true, "link_downed"),
		nonFatal,
		recovered,
		counterBreach("mlx5_1", true, "link_downed"),
		big,
	}
}

func writeSamples() error {
	s, err := New(nil)
	if err != nil {
		return err
	}
	if err := s.Send(context.Background(), sampleEvents()); err != nil {
		return err
	}
	slog.New(NewSlogHandler(slog.LevelInfo)).Warn("journal round trip log line", "device", "mlx5_0", "logtest", "1")
	return nil
}

// privateJournal runs a real systemd-journald in a private mount namespace
// (tmpfs on /run, a temp dir bound on /var/log/journal), re-executes this
// test binary there to write through the real socket, and returns the
// journal directory holding what journald stored.
func privateJournal(t *testing.T) string {
	t.Helper()
	for _, bin := range []string{"unshare", "journalctl"} {
		if _, err := exec.LookPath(bin); err != nil {
			component.Missing(t, "%s not installed: cannot run a private journald", bin)
		}
	}
	if _, err := os.Stat(journaldBin); err != nil {
		component.Missing(t, "%s not installed: cannot run a private journald", journaldBin)
	}
	if st, err := os.Stat("/var/log/journal"); err != nil || !st.IsDir() {
		component.Missing(t, "/var/log/journal does not exist: nothing to bind the private journal on")
	}
	if out, err := exec.Command("unshare", "--mount", "true").CombinedOutput(); err != nil {
		component.Missing(t, "unshare --mount is not permitted here (needs CAP_SYS_ADMIN): %v %s", err, out)
	}

	dir := t.TempDir()
	const script = `
set -u
dir=$1 bin=$2
mount -t tmpfs tmpfs /run || exit 90
mount --bind "$dir" /var/log/journal || exit 91
` + journaldBin + ` </dev/null >/dev/null 2>&1 &
jp=$!
trap 'kill $jp 2>/dev/null; wait $jp' EXIT
i=0
until [ -S /run/systemd/journal/socket ] && [ -S /run/systemd/journal/io.systemd.journal ]; do
	i=$((i+1))
	if [ $i -gt 400 ]; then echo "systemd-journald did not create its sockets" >&2; exit 92; fi
	sleep 0.025
done
journalctl --flush || exit 93
env ` + helperEnv + `=1 "$bin"
rc=$?
journalctl --sync
exit $rc
`
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "--mount", "sh", "-c", script, "sh", dir, os.Args[0])
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("private journald run: %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.journal"))
	if len(files) == 0 {
		t.Fatalf("journald stored no journal file under %s", dir)
	}
	return filepath.Dir(files[0])
}

func query(t *testing.T, dir string, args ...string) []map[string]any {
	t.Helper()
	cmd := exec.Command("journalctl", append([]string{"--directory=" + dir, "-o", "json", "--all", "--no-pager"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("journalctl %v: %v\n%s", args, err, stderr.String())
	}
	var entries []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("journalctl output %q: %v", sc.Text(), err)
		}
		entries = append(entries, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return entries
}

// The journal sink against a real journald, read back with journalctl the
// way DESIGN.md section 3 promises operators: `journalctl NIC_DEVICE=mlx5_0`
// and `-p warning` work.
func TestJournal_3_RealJournaldRoundTrip(t *testing.T) {
	dir := privateJournal(t)
	samples := sampleEvents()

	got := query(t, dir, "NIC_DEVICE=mlx5_0")
	want := samples[:4]
	if len(got) != len(want) {
		t.Fatalf("NIC_DEVICE=mlx5_0 matched %d entries, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		expect := Fields(w)
		expect["MESSAGE"] = w.Message
		expect["PRIORITY"] = fmt.Sprint(int(Priority(w)))
		expect["_TRANSPORT"] = "journal"
		delete(expect, FieldEventID) // random per process
		for k, v := range expect {
			if g[k] != v {
				t.Errorf("entry %d (%s): %s = %v, want %q", i, w.Kind, k, g[k], v)
			}
		}
		if id, _ := g[FieldEventID].(string); !hexID.MatchString(id) {
			t.Errorf("entry %d: EVENT_ID %v", i, g[FieldEventID])
		}
	}
	if got[1]["COUNTER"] != "link_downed" || got[1]["PRIORITY"] != "3" || got[0]["PRIORITY"] != "2" ||
		got[2]["PRIORITY"] != "4" || got[3]["PRIORITY"] != "5" {
		t.Errorf("priorities/counter: %v %v %v %v %v", got[0]["PRIORITY"], got[1]["PRIORITY"], got[2]["PRIORITY"], got[3]["PRIORITY"], got[1]["COUNTER"])
	}
	if got[2]["NOTE"] != "line one\nline two" {
		t.Errorf("multi-line metadata came back as %q", got[2]["NOTE"])
	}

	warn := query(t, dir, "NIC_DEVICE=mlx5_0", "-p", "warning")
	if len(warn) != 3 {
		t.Errorf("-p warning matched %d entries, want the fatal, counter and degraded ones (3)", len(warn))
	}
	byID := query(t, dir, "MESSAGE_ID="+MessageIDCounterBreach, "COUNTER=link_downed")
	if len(byID) != 2 {
		t.Errorf("MESSAGE_ID=counter-breach COUNTER=link_downed matched %d, want 2 (mlx5_0 and mlx5_1)", len(byID))
	}

	big := query(t, dir, "NIC_DEVICE=mlx5_2")
	if len(big) != 1 {
		t.Fatalf("oversized event: %d entries, want 1", len(big))
	}
	if s, _ := big[0]["DUMP"].(string); len(s) != bigValueLen {
		t.Errorf("oversized field came back with %d bytes, want %d", len(s), bigValueLen)
	}

	logs := query(t, dir, "SYSLOG_IDENTIFIER=nichealthd", "LOGTEST=1")
	if len(logs) != 1 {
		t.Fatalf("slog entry: %d found, want 1", len(logs))
	}
	if l := logs[0]; l["DEVICE"] != "mlx5_0" || l["PRIORITY"] != "4" ||
		l["MESSAGE"] != "journal round trip log line device=mlx5_0 logtest=1" {
		t.Errorf("slog entry %v", l)
	}
}
