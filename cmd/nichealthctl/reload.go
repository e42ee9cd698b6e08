package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/nichealth/nichealthd/dbusapi"
)

func runReload(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs, cf := newFlagSet("reload", "reload [--json]\n\n"+
		"Asks the daemon to re-read its configuration file, as systemctl reload nichealthd does.\n"+
		"Needs root or membership in group "+dbusapi.DefaultGroup+".", stderr)
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		return usageError(stderr, fs, "takes no arguments")
	}
	c, code, ok := connect(cf, "reload", stderr)
	if !ok {
		return code
	}
	defer c.Close()
	ctx, cancel := callCtx()
	defer cancel()
	if err := c.Reload(ctx); err != nil {
		if errors.Is(err, dbusapi.ErrConfigRefused) {
			err = fmt.Errorf("the new configuration was refused and the previous one stays in effect: %w", err)
		}
		return fail(stderr, "reload", err)
	}
	m, err := c.Manager(ctx)
	if err != nil {
		return fail(stderr, "reload", err)
	}
	if cf.json {
		if err := writeJSON(stdout, map[string]any{"reloaded": true, "configPath": m.ConfigPath, "configGeneration": m.ConfigGeneration}); err != nil {
			return fail(stderr, "reload", err)
		}
		return exitOK
	}
	fmt.Fprintf(stdout, "Reloaded %s (configuration generation %d).\n", m.ConfigPath, m.ConfigGeneration)
	return exitOK
}
