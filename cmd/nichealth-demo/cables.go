package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cables shows the daemon's cable verdicts (DESIGN.md section 15) in a
// few lines: only the cables whose verdict says something, as
// `nichealthctl cables --json` lists them, so the demo stays short.
func (s *story) cables() {
	if s.busAddr == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, filepath.Join(s.opts.bin, "nichealthctl"), "cables", "--json")
	c.Env = withEnv(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS", s.busAddr)
	out, _ := c.Output() // exit 1 means a cable is suspect
	var lines []struct {
		Device, Direction, Part, PeerName string
		Port                              int
		PeerPort                          int
		Evidence                          []string
	}
	if err := json.Unmarshal(out, &lines); err != nil {
		s.printf("         (nichealthctl cables: %v)\n", err)
		return
	}
	s.say("which way each erring cable errs and what to replace (nichealthctl cables; clean cables say nothing):")
	for _, l := range lines {
		if l.Direction == "" || l.Direction == "none" {
			continue
		}
		peer := ""
		if l.PeerName != "" {
			peer = " ↔ " + l.PeerName + " port " + strconv.Itoa(l.PeerPort)
		}
		s.printf("         %s/%d%s: %s, suspect %s — %s\n", l.Device, l.Port, peer, l.Direction, l.Part, strings.Join(l.Evidence, "; "))
	}
}
