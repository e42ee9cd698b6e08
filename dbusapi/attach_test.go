package dbusapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/dbusapi/dbustest"
)

// nameOwned asks the bus itself whether the API's name has an owner.
func nameOwned(t *testing.T, c *dbus.Conn) bool {
	t.Helper()
	var has bool
	if err := c.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, dbusapi.BusName).Store(&has); err != nil {
		t.Fatal(err)
	}
	return has
}

// dbusapi/API.md: ListEvents(0) returns every kept event. Clients find
// the daemon by its name, and a client that sees it answer (Ready) calls
// ListEvents next; so the history must be in the server before the name
// is owned. Attach runs before the name is requested, and what it
// remembers is what the first client reads. (With the history filled
// after the name was owned, a client on a busy machine read an empty
// ring: TestIntegration_DBus_ListEventsKeepsStartupEvents.)
func TestDBus_5_HistoryIsInPlaceBeforeTheNameIsOwned(t *testing.T) {
	bus := dbustest.Start(t, dbustest.Options{})
	watcher := bus.Connect(t)
	be := dbustest.NewBackend(dbustest.SampleManager(), dbustest.SamplePorts())
	var ownedDuringAttach []bool
	detached := 0
	srv, err := dbusapi.Serve(bus.Connect(t), be, dbusapi.Options{
		Attach: func(s *dbusapi.Server) {
			ownedDuringAttach = append(ownedDuringAttach, nameOwned(t, watcher))
			ev := sampleEvent()
			ev.Message = "a start-up event"
			s.Remember(ev, 7)
		},
		Detach: func(*dbusapi.Server) { detached++ },
	})
	if err != nil {
		t.Fatalf("Serve: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	if len(ownedDuringAttach) != 1 || ownedDuringAttach[0] {
		t.Fatalf("Attach ran %d times, the name owned while it ran: %v; want once, before the name is owned", len(ownedDuringAttach), ownedDuringAttach)
	}
	if !nameOwned(t, watcher) {
		t.Fatal("Serve returned without owning the name")
	}
	recs, err := dbusapi.NewClient(bus.Connect(t), "").ListEvents(ctx(t), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Seq != 7 || !strings.Contains(recs[0].JSON, "a start-up event") {
		t.Fatalf("the first client's ListEvents(0) = %+v, want the one event Attach remembered", recs)
	}
	if detached != 0 {
		t.Fatalf("Detach called %d times on a server that owns its name", detached)
	}

	// A second server cannot own the name: what Attach did is undone.
	attached := 0
	_, err = dbusapi.Serve(bus.Connect(t), be, dbusapi.Options{
		Attach: func(*dbusapi.Server) { attached++ },
		Detach: func(*dbusapi.Server) { detached++ },
	})
	if err == nil || !strings.Contains(err.Error(), "already owned") {
		t.Fatalf("a second Serve: %v, want the name already owned", err)
	}
	if attached != 1 || detached != 1 {
		t.Fatalf("a server that could not own the name: attached %d, detached %d; want 1 and 1", attached, detached)
	}
}

// A name the bus policy denies is the other way Serve can fail after
// Attach: Detach undoes it there too, or the daemon would post to a
// server nobody can reach.
func TestDBus_5_DeniedNameDetaches(t *testing.T) {
	bus := dbustest.Start(t, dbustest.Options{NoPolicy: true})
	be := dbustest.NewBackend(dbustest.SampleManager(), nil)
	attached, detached := 0, 0
	_, err := dbusapi.Serve(bus.Connect(t), be, dbusapi.Options{
		Attach: func(*dbusapi.Server) { attached++ },
		Detach: func(*dbusapi.Server) { detached++ },
	})
	if err == nil || !strings.Contains(err.Error(), "policy does not let this user own") {
		t.Fatalf("Serve without policy: %v", err)
	}
	if attached != 1 || detached != 1 {
		t.Fatalf("a server denied its name: attached %d, detached %d; want 1 and 1", attached, detached)
	}
}

// Supervise hands its Attach to every server it serves, so the history
// is in place before the name is owned on each (re)connection.
func TestDBus_5_SuperviseAttachesBeforeTheName(t *testing.T) {
	bus := dbustest.Start(t, dbustest.Options{})
	watcher := bus.Connect(t)
	be := dbustest.NewBackend(dbustest.SampleManager(), dbustest.SamplePorts())
	type seen struct {
		owned bool
		err   error
	}
	attached := make(chan seen, 1)
	c, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		dbusapi.Supervise(c, be, dbusapi.SuperviseOptions{
			Connect: func() (*dbus.Conn, error) { return dbus.Connect(bus.Address) },
			// Off the test's goroutine: report, never t.Fatal.
			Attach: func(*dbusapi.Server) {
				var s seen
				s.err = watcher.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, dbusapi.BusName).Store(&s.owned)
				select {
				case attached <- s:
				default:
				}
			},
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case s := <-attached:
		if s.err != nil || s.owned {
			t.Fatalf("Supervise attached a server after it owned the name (%v)", s.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Supervise never attached a server")
	}
}
