// Command testsummary runs `go test -json` for make test and turns its
// stream into what a CI log needs: one line per package as it finishes, the
// output of every failed test, every skipped test with its reason, and a
// closing line "test: N passed, N failed, N skipped". A package that runs
// longer than -progress (a minute) without finishing gets a line each
// minute with its passes so far and its longest-running test, so a long
// black-box package is not mistaken for a hung run.
//
//	testsummary run -save FILE -- go test -json ./...   run, report, keep the stream
//	testsummary report FILE                              the skips and the closing line again
//
// Counts are of leaf tests (a test with subtests counts as its subtests); a
// package that fails outside any test (build error, TestMain, timeout)
// counts as one failure. Exit status 1 when anything failed.
package main
