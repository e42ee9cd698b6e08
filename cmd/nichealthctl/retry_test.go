package main

import (
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/dbusapi"
)

// TestCtl_EventsRetryRejected: status shows the events a sink rejected
// and parked; events --retry-rejected asks the daemon to offer them again.
func TestCtl_EventsRetryRejected(t *testing.T) {
	f := newFixture(t)
	f.update(func(m *dbusapi.ManagerView, _ *[]dbusapi.PortView) { m.RejectedEvents = 3 })
	out, errs, code := ctl(t, f.bus, nil, "status")
	if code != exitOK || !strings.Contains(out, "3 events rejected as invalid by a sink and parked") {
		t.Errorf("status: code %d\n%s%s", code, out, errs)
	}
	out, errs, code = ctl(t, f.bus, nil, "events", "--retry-rejected")
	if code != exitOK || !strings.Contains(out, "Offering 3 rejected events to their sinks again") {
		t.Errorf("events --retry-rejected: code %d\n%s%s", code, out, errs)
	}
	out, _, code = ctl(t, f.bus, nil, "events", "--retry-rejected", "--json")
	if code != exitOK || strings.Join(strings.Fields(out), "") != `{"retried":3}` {
		t.Errorf("events --retry-rejected --json: code %d %q", code, out)
	}
}
