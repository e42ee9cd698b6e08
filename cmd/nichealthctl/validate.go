package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/nichealth/nichealthd/config"
)

const validateUsage = `validate [FILE] [--json]

Checks a configuration file exactly as nichealthd does on start and on
reload, without applying it and without a running daemon. FILE defaults to
` + config.DefaultPath + `.

Exit status: 0 valid, 1 invalid (the file, key and reason are printed),
2 usage error.`

// validateJSON is validate --json.
type validateJSON struct {
	File            string `json:"file"`
	Valid           bool   `json:"valid"`
	Exists          bool   `json:"exists"`
	CountersEnabled int    `json:"countersEnabled"`
	PollInterval    string `json:"pollInterval,omitempty"`
	Error           string `json:"error,omitempty"`
	Key             string `json:"key,omitempty"`
	Line            int    `json:"line,omitempty"`
	Reason          string `json:"reason,omitempty"`
}

func runValidate(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs, cf := newFlagSet("validate", validateUsage, stderr)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) > 1 {
		return usageError(stderr, fs, "takes at most one FILE, got %d arguments", len(pos))
	}
	path := config.DefaultPath
	if len(pos) == 1 {
		path = pos[0]
	}
	out := validateJSON{File: path, Exists: true}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		out.Exists = false
	}
	cfg, err := config.Load(path)
	if err != nil {
		out.Error = err.Error()
		var ce *config.Error
		if errors.As(err, &ce) {
			out.Key, out.Line, out.Reason = ce.Key, ce.Line, ce.Reason
		}
		if cf.json {
			if err := writeJSON(stdout, out); err != nil {
				return fail(stderr, "validate", err)
			}
		} else {
			fmt.Fprintf(stderr, "nichealthctl validate: %v\n", err)
		}
		return exitFailed
	}
	out.Valid = true
	out.PollInterval = cfg.PollInterval.String()
	if cfg.CountersEnabled {
		for _, d := range cfg.Counters {
			if d.Enabled {
				out.CountersEnabled++
			}
		}
	}
	if cf.json {
		if err := writeJSON(stdout, out); err != nil {
			return fail(stderr, "validate", err)
		}
		return exitOK
	}
	counters := fmt.Sprintf("%d counters enabled", out.CountersEnabled)
	if !cfg.CountersEnabled {
		counters = "counter detection disabled"
	}
	if !out.Exists {
		// Only the default path may be absent (config.Load): the daemon
		// then runs on built-in defaults, which is worth saying plainly.
		fmt.Fprintf(stdout, "%s: not present; nichealthd runs with the built-in defaults (%s, poll every %s)\n", path, counters, out.PollInterval)
		return exitOK
	}
	fmt.Fprintf(stdout, "%s: configuration is valid (%s, poll every %s)\n", path, counters, out.PollInterval)
	return exitOK
}
