package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/event"
)

// eventLine is one line of events --json: the daemon's sequence number and
// the event exactly as the JSON-lines sink writes it.
type eventLine struct {
	Seq   uint64          `json:"seq"`
	Event json.RawMessage `json:"event"`
}

func runEvents(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs, cf := newFlagSet("events", "events [--since SEQ] [--follow] [--json]", stderr)
	since := fs.Uint64("since", 0, "show only events with a sequence number above SEQ (with --follow: all of them, not just the last 10)")
	follow := fs.Bool("follow", false, "print the last 10 events, then new ones as they happen (Ctrl-C stops), as journalctl -f does")
	fs.BoolVar(follow, "f", false, "short for --follow")
	retry := fs.Bool("retry-rejected", false, "offer the events a sink rejected as invalid to it again (root or the admin group)")
	pos, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 0 {
		return usageError(stderr, fs, "takes no arguments")
	}
	c, code, ok := connect(cf, "events", stderr)
	if !ok {
		return code
	}
	defer c.Close()
	if *retry {
		return retryRejected(c, cf.json, stdout, stderr)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	pr := &eventPrinter{w: stdout, json: cf.json, p: paletteFor(stdout), last: *since}

	var live <-chan dbusapi.EventRecord
	var owner <-chan bool
	if *follow {
		// Subscribe before listing, so nothing falls between the two;
		// duplicates are dropped by sequence number.
		var err error
		if live, err = c.WatchEvents(ctx); err != nil {
			return fail(stderr, "events", err)
		}
		if owner, err = c.WatchDaemon(ctx); err != nil {
			return fail(stderr, "events", err)
		}
	}
	lctx, cancel := callCtx()
	recs, err := c.ListEvents(lctx, *since)
	cancel()
	if err != nil {
		return fail(stderr, "events", err)
	}
	if *follow && !flagSet(fs, "since") && len(recs) > followBacklog {
		// A long-running daemon keeps hundreds of events; someone following
		// wants the recent context, as journalctl -f gives it.
		recs = recs[len(recs)-followBacklog:]
	}
	for _, r := range recs {
		pr.print(r)
	}
	if !*follow {
		if len(recs) == 0 && !cf.json {
			fmt.Fprintf(stderr, "No events above sequence number %d are kept (older ones are in the journal: journalctl -t nichealthd).\n", *since)
		}
		return exitOK
	}
	for {
		select {
		case <-ctx.Done():
			return exitOK
		case r, ok := <-live:
			if !ok {
				return exitOK
			}
			pr.print(r)
		case up, ok := <-owner:
			if !ok {
				return exitOK
			}
			if !up {
				fmt.Fprintln(stderr, "nichealthd left the bus; waiting for it to come back")
				continue
			}
			fmt.Fprintln(stderr, "nichealthd is back")
			lctx, cancel := callCtx()
			recs, err := c.ListEvents(lctx, pr.last)
			cancel()
			if err != nil {
				fmt.Fprintf(stderr, "nichealthctl events: %v\n", err)
				continue
			}
			for _, r := range recs {
				pr.print(r)
			}
		}
	}
}

// followBacklog is how many past events --follow shows before the live
// ones when no --since is given: journalctl -f's 10 lines.
const followBacklog = 10

// flagSet reports whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

type eventPrinter struct {
	w    io.Writer
	json bool
	p    palette
	last uint64 // highest sequence number printed
}

func (e *eventPrinter) print(r dbusapi.EventRecord) {
	if r.Seq <= e.last {
		return
	}
	e.last = r.Seq
	if e.json {
		line, err := json.Marshal(eventLine{Seq: r.Seq, Event: json.RawMessage(r.JSON)})
		if err != nil {
			// Not valid JSON from the daemon: keep the stream valid.
			line, _ = json.Marshal(map[string]any{"seq": r.Seq, "raw": r.JSON})
		}
		fmt.Fprintf(e.w, "%s\n", line)
		return
	}
	ev, err := r.Event()
	if err != nil {
		fmt.Fprintf(e.w, "#%d (undecodable event: %s)\n", r.Seq, escapeControls(err.Error()))
		return
	}
	ev = termSafe(ev)
	fmt.Fprintf(e.w, "#%d %s %s %s %s: %s\n", r.Seq, ev.GeneratedTimestamp.Local().Format("2006-01-02 15:04:05"),
		e.severity(ev), ev.CheckName, entity(ev), ev.Message)
}

// severity is the event's word in the one vocabulary of every view
// (healthy, degraded, fatal), padded to line the messages up.
func (e *eventPrinter) severity(ev event.Event) string {
	w := severityWord(ev.IsFatal, ev.IsHealthy)
	return e.p.health(w) + strings.Repeat(" ", len("degraded")-len(w))
}

func entity(ev event.Event) string {
	dev, port := ev.Device(), ev.Port()
	switch {
	case dev == "":
		return "(node)"
	case port == "":
		return dev
	}
	return dev + "/" + port
}

func retryRejected(c *dbusapi.Client, asJSON bool, stdout, stderr io.Writer) int {
	ctx, cancel := callCtx()
	defer cancel()
	n, err := c.RetryRejected(ctx)
	if err != nil {
		return fail(stderr, "events --retry-rejected", err)
	}
	if asJSON {
		if err := writeJSON(stdout, map[string]any{"retried": n}); err != nil {
			return fail(stderr, "events --retry-rejected", err)
		}
		return exitOK
	}
	fmt.Fprintf(stdout, "Offering %d rejected events to their sinks again; nichealthctl status shows how many stay rejected.\n", n)
	return exitOK
}
