package dbusapi

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/godbus/dbus/v5"
)

// DefaultRetry is how long Supervise waits before reconnecting to a system
// bus that was unreachable or went away (dbus-daemon restarted).
const DefaultRetry = 2 * time.Second

// SuperviseOptions tune Supervise.
type SuperviseOptions struct {
	// Options returns the Serve options for each new connection (the admin
	// group may have been reloaded since the last one).
	Options func() Options
	// Attach is called with each server once it is exported, before it
	// owns the bus name (Options.Attach): the caller backfills ListEvents
	// and starts publishing to it. Detach is called when the name cannot
	// be owned, or when the connection is lost, before Close.
	Attach, Detach func(*Server)
	// Connect opens the bus connection. Default: a private connection to
	// the system bus (DBUS_SYSTEM_BUS_ADDRESS honoured), authenticated and
	// registered; private, so that closing it on a reconnect closes only
	// ours.
	Connect func() (*dbus.Conn, error)
	Retry   time.Duration
	Logger  *slog.Logger
}

// Supervise keeps the API exported on the bus until ctx is done: a bus
// that is unreachable at start or restarts later is reconnected every
// Retry, with one log line per outage. Monitoring never waits on it.
func Supervise(ctx context.Context, b Backend, so SuperviseOptions) {
	if so.Connect == nil {
		so.Connect = connectSystemBus
	}
	if so.Retry <= 0 {
		so.Retry = DefaultRetry
	}
	log := so.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	down := false
	for {
		s, conn, err := serveOnce(b, so)
		if err != nil {
			if !down {
				log.Warn("D-Bus API unavailable; monitoring continues and the connection is retried", "err", err)
				down = true
			}
		} else {
			if down {
				log.Info("D-Bus API available again")
			}
			down = false
			s.Refresh()
			select {
			case <-ctx.Done():
			case <-conn.Context().Done():
				log.Warn("lost the system bus; reconnecting")
			}
			if so.Detach != nil {
				so.Detach(s)
			}
			s.Close()
			conn.Close()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(so.Retry):
		}
	}
}

func serveOnce(b Backend, so SuperviseOptions) (*Server, *dbus.Conn, error) {
	conn, err := so.Connect()
	if err != nil {
		return nil, nil, err
	}
	var opts Options
	if so.Options != nil {
		opts = so.Options()
	}
	opts.Attach, opts.Detach = so.Attach, so.Detach
	s, err := Serve(conn, b, opts)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return s, conn, nil
}

func connectSystemBus() (*dbus.Conn, error) {
	conn, err := dbus.SystemBusPrivate()
	if err != nil {
		return nil, fmt.Errorf("connect to the system bus: %w", err)
	}
	if err := conn.Auth(nil); err != nil {
		conn.Close()
		return nil, fmt.Errorf("authenticate to the system bus: %w", err)
	}
	if err := conn.Hello(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("register on the system bus: %w", err)
	}
	return conn, nil
}
