package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// run feeds testsummary a real go test -json stream of testdata/sample.
func run(t *testing.T, fail bool) (string, int, string) {
	t.Helper()
	if fail {
		t.Setenv("SAMPLE_FAIL", "1")
	}
	save := filepath.Join(t.TempDir(), "stream.json")
	var out, errb bytes.Buffer
	code := runCmd([]string{"-save", save, "--", "go", "-C", "testdata/sample", "test", "-count=1", "-json", "."}, &out, &errb)
	if errb.Len() > 0 {
		t.Logf("stderr: %s", errb.String())
	}
	return out.String(), code, save
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestSummary_CountsLeafTestsAndListsSkipReasons(t *testing.T) {
	out, code, save := run(t, false)
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	// TestPasses, TestFailsWhenAsked, TestParent/one pass; TestParent
	// itself is not counted; two skips.
	if got := lastLine(out); got != "test: 3 passed, 0 failed, 2 skipped" {
		t.Errorf("last line = %q\n%s", got, out)
	}
	for _, want := range []string{
		"SKIP example.com/sample TestSkipsWithReason: sample_test.go:13: dbus-daemon not installed (apt-get install dbus)",
		"SKIP example.com/sample TestParent/two: sample_test.go:25: not on this machine",
		"ok   example.com/sample",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var rep, errb bytes.Buffer
	if code := reportCmd([]string{save}, &rep, &errb); code != 0 || lastLine(rep.String()) != "test: 3 passed, 0 failed, 2 skipped" ||
		!strings.Contains(rep.String(), "TestSkipsWithReason: sample_test.go:13:") {
		t.Errorf("report of the saved stream: exit %d\n%s%s", code, rep.String(), errb.String())
	}
}

func TestSummary_FailureShowsOutputAndExitsOne(t *testing.T) {
	out, code, _ := run(t, true)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if got := lastLine(out); got != "test: 2 passed, 1 failed, 2 skipped" {
		t.Errorf("last line = %q\n%s", got, out)
	}
	if !strings.Contains(out, "--- FAIL example.com/sample TestFailsWhenAsked") || !strings.Contains(out, "asked to fail") {
		t.Errorf("the failed test's output is missing:\n%s", out)
	}
	// The end of the log names the failed test and how to run it alone.
	tail := strings.Split(strings.TrimRight(out, "\n"), "\n")
	tail = tail[max(0, len(tail)-5):]
	if !strings.Contains(strings.Join(tail, "\n"), "why: sample_test.go:19: asked to fail") {
		t.Errorf("the last lines do not say why the test failed:\n%s", strings.Join(tail, "\n"))
	}
	if !strings.Contains(strings.Join(tail, "\n"), "go test -race -count=1 -run '^TestFailsWhenAsked$' example.com/sample") {
		t.Errorf("the last lines do not give the re-run command:\n%s", strings.Join(tail, "\n"))
	}
}

func TestSummary_HelperProcessIsNotASkip(t *testing.T) {
	out, _, _ := run(t, false)
	if strings.Contains(out, "SKIP example.com/sample TestHelperProcess") {
		t.Errorf("the helper-process body is listed as a skip:\n%s", out)
	}
	if !strings.Contains(out, "(1 helper-process bodies") {
		t.Errorf("the helper-process body is not mentioned:\n%s", out)
	}
}

func TestRerun(t *testing.T) {
	mod := "github.com/nichealth/nichealthd"
	for _, tc := range []struct{ pkg, test, want string }{
		{mod + "/daemon", "TestX", "go test -race -count=1 -run '^TestX$' ./daemon"},
		{mod + "/cmd/nichealthd", "TestY/dgx-h100_(x)", `go test -race -count=1 -run '^TestY$/^dgx-h100_\(x\)$' ./cmd/nichealthd`},
		{mod, "TestLayering", "go test -race -count=1 -run '^TestLayering$' ."},
		{"example.com/other", "TestZ", "go test -race -count=1 -run '^TestZ$' example.com/other"},
	} {
		if got := rerun(mod, tc.pkg, tc.test); got != tc.want {
			t.Errorf("rerun(%s, %s) = %s, want %s", tc.pkg, tc.test, got, tc.want)
		}
	}
}

func TestSummary_PackageFailureOutsideTestsCounts(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/broken\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "broken_test.go"), []byte("package broken\n\nfunc TestX(t *testing.T) { undefined() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := runCmd([]string{"--", "go", "-C", dir, "test", "-count=1", "-json", "."}, &out, &errb)
	if code != 1 || !strings.HasSuffix(lastLine(out.String()), "0 passed, 1 failed, 0 skipped") {
		t.Errorf("a package that does not build: exit %d\n%s\nstderr: %s", code, out.String(), errb.String())
	}
}

// TestProgress_LongPackageSaysHowFarItIs: a package running longer than the
// interval gets a line naming its passes and its longest-running test; a
// finished one is never mentioned again.
func TestProgress_LongPackageSaysHowFarItIs(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(&buf, time.Minute)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p.event(testEvent{Action: "start", Package: "m/slow"}, t0)
	p.event(testEvent{Action: "run", Package: "m/slow", Test: "TestA"}, t0)
	p.event(testEvent{Action: "pass", Package: "m/slow", Test: "TestA"}, t0.Add(time.Second))
	p.event(testEvent{Action: "run", Package: "m/slow", Test: "TestBlackBox"}, t0.Add(2*time.Second))
	p.event(testEvent{Action: "run", Package: "m/slow", Test: "TestBlackBox/sub"}, t0.Add(3*time.Second))
	p.event(testEvent{Action: "start", Package: "m/quick"}, t0)
	p.tick(t0.Add(30 * time.Second))
	if buf.Len() != 0 {
		t.Fatalf("said something before the interval: %q", buf.String())
	}
	p.tick(t0.Add(62 * time.Second))
	want := "...  m/slow running 1m2s: 1 passed, TestBlackBox for 1m0s\n"
	if !strings.Contains(buf.String(), want) {
		t.Fatalf("progress = %q, want a line %q", buf.String(), want)
	}
	p.event(testEvent{Action: "pass", Package: "m/slow", Elapsed: 70}, t0.Add(70*time.Second))
	p.event(testEvent{Action: "pass", Package: "m/quick", Elapsed: 70}, t0.Add(70*time.Second))
	buf.Reset()
	p.tick(t0.Add(200 * time.Second))
	if buf.Len() != 0 {
		t.Fatalf("finished packages still reported: %q", buf.String())
	}
}
