package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testsummary run -save FILE -- go test -json ... | testsummary report FILE")
		os.Exit(2)
	}
	var code int
	switch os.Args[1] {
	case "run":
		code = runCmd(os.Args[2:], os.Stdout, os.Stderr)
	case "report":
		code = reportCmd(os.Args[2:], os.Stdout, os.Stderr)
	default:
		fmt.Fprintf(os.Stderr, "testsummary: unknown mode %q (run or report)\n", os.Args[1])
		code = 2
	}
	os.Exit(code)
}

func runCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	save := fs.String("save", "", "file to keep the raw go test -json stream in")
	every := fs.Duration("progress", time.Minute, "say how far a package is when it has run this long without finishing (0: never)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	argv := fs.Args()
	if len(argv) == 0 {
		fmt.Fprintln(stderr, "testsummary run: no command (testsummary run -save FILE -- go test -json ./...)")
		return 2
	}
	var keep io.Writer = io.Discard
	if *save != "" {
		f, err := os.Create(*save)
		if err != nil {
			fmt.Fprintf(stderr, "testsummary: %v\n", err)
			return 2
		}
		defer f.Close()
		keep = f
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = stderr // build errors of go test itself
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "testsummary: %v\n", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "testsummary: start %s: %v\n", argv[0], err)
		return 2
	}
	s := newSummary(stdout)
	if *every > 0 {
		sw := &syncWriter{w: stdout}
		s.w = sw
		s.progress = newProgress(sw, *every)
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			t := time.NewTicker(*every / 6)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case now := <-t.C:
					s.progress.tick(now)
				}
			}
		}()
	}
	s.read(io.TeeReader(out, keep))
	waitErr := cmd.Wait()
	s.finish()
	var exit *exec.ExitError
	if errors.As(waitErr, &exit) && s.failed() == 0 {
		// go test failed without a failing package in the stream (e.g. it
		// could not list the packages): that is a failure too.
		s.extraFailures++
		fmt.Fprintf(stdout, "FAIL %s exited with %v outside any test\n", strings.Join(argv, " "), waitErr)
	} else if waitErr != nil && exit == nil {
		fmt.Fprintf(stderr, "testsummary: %v\n", waitErr)
		return 2
	}
	s.report()
	if s.failed() > 0 {
		return 1
	}
	return 0
}

func reportCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: testsummary report FILE")
		return 2
	}
	f, err := os.Open(args[0])
	if err != nil {
		fmt.Fprintf(stderr, "testsummary: %v (run make test-go first)\n", err)
		return 2
	}
	defer f.Close()
	s := newSummary(io.Discard)
	s.read(f)
	s.finish()
	s.w = stdout
	s.report()
	if s.failed() > 0 {
		return 1
	}
	return 0
}

// testEvent is one line of go test -json (cmd/test2json).
type testEvent struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

type result struct {
	pkg, test string
	action    string   // pass, fail, skip
	output    []string // the test's own lines
}

type summary struct {
	w             io.Writer
	tests         map[string]*result // key pkg + " " + test
	order         []string
	pkgOutput     map[string][]string
	pkgFailed     []string // packages that failed with no failed test
	pkgFailedTest map[string]bool
	extraFailures int
	pass, fail    int
	skip          []*result
	failedTests   []*result
	helpers       int // helper-process bodies, not counted
	// progress, when set, hears every event to say how far long packages
	// are; it writes from its own goroutine, so both write through one
	// syncWriter.
	progress *progress
}

func newSummary(w io.Writer) *summary {
	return &summary{w: w, tests: map[string]*result{}, pkgOutput: map[string][]string{}, pkgFailedTest: map[string]bool{}}
}

func (s *summary) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e testEvent
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// Not test2json (e.g. a vet or build message on stdout): show it.
			fmt.Fprintf(s.w, "%s\n", bytes.TrimRight(line, "\n"))
			continue
		}
		s.event(e)
	}
}

func (s *summary) event(e testEvent) {
	if s.progress != nil {
		s.progress.event(e, time.Now())
	}
	if e.Action == "build-output" {
		// Compiler errors: always wanted, and keyed by ImportPath, not Package.
		fmt.Fprintf(s.w, "    %s\n", strings.TrimRight(e.Output, "\n"))
		return
	}
	if e.Test == "" {
		switch e.Action {
		case "output":
			s.pkgOutput[e.Package] = append(s.pkgOutput[e.Package], strings.TrimRight(e.Output, "\n"))
		case "pass":
			fmt.Fprintf(s.w, "ok   %s %.1fs\n", e.Package, e.Elapsed)
		case "skip":
			fmt.Fprintf(s.w, "?    %s (no tests)\n", e.Package)
		case "fail":
			fmt.Fprintf(s.w, "FAIL %s %.1fs\n", e.Package, e.Elapsed)
			if !s.pkgFailedTest[e.Package] {
				s.pkgFailed = append(s.pkgFailed, e.Package)
				for _, l := range s.pkgOutput[e.Package] {
					fmt.Fprintf(s.w, "    %s\n", l)
				}
			}
		}
		return
	}
	key := e.Package + " " + e.Test
	r := s.tests[key]
	if r == nil {
		r = &result{pkg: e.Package, test: e.Test}
		s.tests[key] = r
		s.order = append(s.order, key)
	}
	switch e.Action {
	case "output":
		r.output = append(r.output, strings.TrimRight(e.Output, "\n"))
	case "pass", "fail", "skip":
		r.action = e.Action
		if e.Action == "fail" {
			s.pkgFailedTest[e.Package] = true
			if !s.hasSubtests(r) {
				fmt.Fprintf(s.w, "--- FAIL %s %s\n", e.Package, e.Test)
				for _, l := range r.output {
					fmt.Fprintf(s.w, "    %s\n", l)
				}
			}
		}
	}
}

// hasSubtests: parents are not counted, their subtests are.
func (s *summary) hasSubtests(r *result) bool {
	prefix := r.pkg + " " + r.test + "/"
	for k := range s.tests {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

// isHelperProcess says whether a test is the body of a child process that
// other tests re-execute (Go's TestHelperProcess idiom): it runs nothing
// on its own, so it is neither a pass nor a skip.
func isHelperProcess(test string) bool {
	top, _, _ := strings.Cut(test, "/")
	return strings.HasSuffix(top, "HelperProcess")
}

func (s *summary) finish() {
	for _, k := range s.order {
		r, ok := s.tests[k]
		if !ok {
			continue
		}
		if s.hasSubtests(r) {
			continue
		}
		if isHelperProcess(r.test) && r.action != "fail" {
			s.helpers++
			continue
		}
		switch r.action {
		case "pass":
			s.pass++
		case "fail":
			s.fail++
			s.failedTests = append(s.failedTests, r)
		case "skip":
			s.skip = append(s.skip, r)
		case "":
			// Started but never ended: the package panicked or timed out
			// inside it; the package failure counts it.
		}
	}
	sort.SliceStable(s.skip, func(i, j int) bool {
		if s.skip[i].pkg != s.skip[j].pkg {
			return s.skip[i].pkg < s.skip[j].pkg
		}
		return s.skip[i].test < s.skip[j].test
	})
}

func (s *summary) failed() int { return s.fail + len(s.pkgFailed) + s.extraFailures }

// reason is what the test said before skipping: its own output, without
// the === RUN / --- SKIP framing.
func reason(r *result) string {
	var parts []string
	for _, l := range r.output {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") {
			continue
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " | ")
}

// failLine matches the line a t.Error or t.Fatal starts with.
var failLine = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: `)

// why is the last thing the failed test reported, cut to one short
// line: a CI log often keeps only its end, and that end should say why
// as well as what failed (the whole output is above, at the failure).
// The last, not the first: t.Logf lines look the same, and a test logs
// its figures before it judges them.
func why(r *result) string {
	const max = 300
	for _, l := range slices.Backward(r.output) {
		if failLine.MatchString(l) {
			l = strings.TrimSpace(l)
			if len(l) > max {
				l = strings.ToValidUTF8(l[:max], "") + " …"
			}
			return l
		}
	}
	w := reason(r)
	if len(w) > max {
		w = strings.ToValidUTF8(w[:max], "") + " …"
	}
	return w
}

func (s *summary) report() {
	if len(s.skip) > 0 {
		fmt.Fprintf(s.w, "Skipped tests (%d), with their reasons:\n", len(s.skip))
		for _, r := range s.skip {
			fmt.Fprintf(s.w, "  SKIP %s %s: %s\n", r.pkg, r.test, reason(r))
		}
	}
	if s.helpers > 0 {
		fmt.Fprintf(s.w, "(%d helper-process bodies, which run only when another test re-executes them, are not counted)\n", s.helpers)
	}
	if len(s.failedTests) > 0 {
		// Last, so the end of a long log names what failed and how to run
		// it alone.
		fmt.Fprintf(s.w, "Failed tests (%d); each re-runs alone with the command below it:\n", len(s.failedTests))
		mod := modulePath()
		for _, r := range s.failedTests {
			fmt.Fprintf(s.w, "  FAIL %s %s\n    why: %s\n    %s\n", r.pkg, r.test, why(r), rerun(mod, r.pkg, r.test))
		}
	}
	for _, p := range s.pkgFailed {
		fmt.Fprintf(s.w, "Failed outside any test: %s\n    go test -race -count=1 %s\n", p, pkgArg(modulePath(), p))
	}
	fmt.Fprintf(s.w, "test: %d passed, %d failed, %d skipped\n", s.pass, s.failed(), len(s.skip))
}

// rerun is the go test command that runs one test (or subtest) alone, as
// make test runs it.
func rerun(mod, pkg, test string) string {
	parts := strings.Split(test, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return fmt.Sprintf("go test -race -count=1 -run '%s' %s", strings.Join(parts, "/"), pkgArg(mod, pkg))
}

// pkgArg names a package of the module in the current directory by its
// relative path (./daemon), and any other by its import path.
func pkgArg(mod, pkg string) string {
	if mod != "" {
		if pkg == mod {
			return "."
		}
		if rest, ok := strings.CutPrefix(pkg, mod+"/"); ok {
			return "./" + rest
		}
	}
	return pkg
}

var moduleLine = regexp.MustCompile(`(?m)^module\s+(\S+)`)

// modulePath is the module of the current directory's go.mod, "" without one.
func modulePath() string {
	b, err := os.ReadFile("go.mod")
	if err != nil {
		return ""
	}
	if m := moduleLine.FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return ""
}
