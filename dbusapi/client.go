package dbusapi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/godbus/dbus/v5"

	"github.com/nichealth/nichealthd/checks/health"
)

// Client reads and drives a running nichealthd over D-Bus. It is what
// nichealthctl uses; scripts in Go can use it too.
type Client struct {
	conn    *dbus.Conn
	owned   bool
	busName string
}

// Dial connects to the system bus: address "" means the default, which
// honours DBUS_SYSTEM_BUS_ADDRESS as every D-Bus client does. Outcomes:
//   - (*Client, nil): connected; the daemon may still be absent (the first
//     call then fails with ErrDaemonNotRunning);
//   - (nil, err wrapping ErrBusUnreachable): no bus at that address.
func Dial(address string) (*Client, error) {
	var conn *dbus.Conn
	var err error
	if address == "" {
		conn, err = dbus.ConnectSystemBus()
	} else {
		conn, err = dbus.Connect(address)
	}
	if err != nil {
		where := address
		if where == "" {
			where = "the default system bus unix:path=/run/dbus/system_bus_socket (set DBUS_SYSTEM_BUS_ADDRESS or --bus-address to use another)"
			if env := os.Getenv("DBUS_SYSTEM_BUS_ADDRESS"); env != "" {
				where = env + " (from DBUS_SYSTEM_BUS_ADDRESS)"
			}
		}
		return nil, fmt.Errorf("%w: connect to %s: %v: is dbus running?", ErrBusUnreachable, where, err)
	}
	return &Client{conn: conn, owned: true, busName: BusName}, nil
}

// NewClient wraps a connection the caller owns; Close will not close it.
// busName "" means BusName.
func NewClient(conn *dbus.Conn, busName string) *Client {
	if busName == "" {
		busName = BusName
	}
	return &Client{conn: conn, busName: busName}
}

// Close closes the connection if Dial opened it.
func (c *Client) Close() error {
	if c.owned {
		return c.conn.Close()
	}
	return nil
}

// Conn returns the underlying connection.
func (c *Client) Conn() *dbus.Conn { return c.conn }

// RemoteError is an error the daemon or the bus returned. It unwraps to the
// matching sentinel (ErrNoSuchPort, ErrAccessDenied, ...) when there is one.
type RemoteError struct {
	Name    string // D-Bus error name
	Message string
	kind    error
}

func (e *RemoteError) Error() string { return e.Message }
func (e *RemoteError) Unwrap() error { return e.kind }

// mapError turns a godbus error into one callers can test with errors.Is.
func (c *Client) mapError(err error) error {
	if err == nil {
		return nil
	}
	var de dbus.Error
	if !errors.As(err, &de) {
		if errors.Is(err, dbus.ErrClosed) {
			return fmt.Errorf("%w: the connection was closed", ErrBusUnreachable)
		}
		return err
	}
	msg := de.Error()
	var kind error
	switch de.Name {
	case "org.freedesktop.DBus.Error.NameHasNoOwner", "org.freedesktop.DBus.Error.ServiceUnknown":
		return ErrDaemonNotRunning
	case "org.freedesktop.DBus.Error.AccessDenied":
		kind = ErrAccessDenied
		msg = "access denied by the D-Bus policy: use sudo or join group " + DefaultGroup + " (" + msg + ")"
	case ErrNameAccessDenied:
		kind = ErrAccessDenied
	case ErrNameNoSuchPort, errUnknownObject:
		kind = ErrNoSuchPort
	case ErrNameNotLatched:
		kind = ErrNotLatched
	case ErrNameInvalidArgument, "org.freedesktop.DBus.Error.InvalidArgs":
		kind = ErrInvalidArgument
	case ErrNameConfigRefused:
		kind = ErrConfigRefused
	}
	return &RemoteError{Name: de.Name, Message: msg, kind: kind}
}

func (c *Client) call(ctx context.Context, path dbus.ObjectPath, method string, args ...any) *dbus.Call {
	// NoAutoStart: an absent daemon must be reported, not activated (and
	// then the bus answers NameHasNoOwner, which maps to ErrDaemonNotRunning).
	return c.conn.Object(c.busName, path).CallWithContext(ctx, method, dbus.FlagNoAutoStart, args...)
}

// Manager returns the daemon-wide state.
func (c *Client) Manager(ctx context.Context) (ManagerView, error) {
	var m map[string]dbus.Variant
	if err := c.call(ctx, RootPath, propertiesIf+".GetAll", ManagerIface).Store(&m); err != nil {
		return ManagerView{}, c.mapError(err)
	}
	return decodeManager(m), nil
}

// Ports returns every monitored port, sorted by device (mlx5_2 before
// mlx5_10) and port.
func (c *Client) Ports(ctx context.Context) ([]PortView, error) {
	var objs map[dbus.ObjectPath]map[string]map[string]dbus.Variant
	if err := c.call(ctx, RootPath, objectManager+".GetManagedObjects").Store(&objs); err != nil {
		return nil, c.mapError(err)
	}
	out := make([]PortView, 0, len(objs))
	for _, ifs := range objs {
		if props, ok := ifs[PortIface]; ok {
			out = append(out, decodePort(props))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Device != out[j].Device {
			return naturalLess(out[i].Device, out[j].Device)
		}
		return out[i].Port < out[j].Port
	})
	return out, nil
}

// Port returns one port; the error wraps ErrNoSuchPort when it is not
// monitored.
func (c *Client) Port(ctx context.Context, device string, port int) (PortView, error) {
	if port < 0 || port > 1<<31 {
		return PortView{}, fmt.Errorf("%w: port %d out of range", ErrInvalidArgument, port)
	}
	var p dbus.ObjectPath
	if err := c.call(ctx, RootPath, ManagerIface+".GetPort", device, uint32(port)).Store(&p); err != nil {
		return PortView{}, c.mapError(err)
	}
	var m map[string]dbus.Variant
	if err := c.call(ctx, p, propertiesIf+".GetAll", PortIface).Store(&m); err != nil {
		return PortView{}, c.mapError(err)
	}
	return decodePort(m), nil
}

// ListEvents returns the kept events with a sequence number above since,
// oldest first.
func (c *Client) ListEvents(ctx context.Context, since uint64) ([]EventRecord, error) {
	var recs []EventRecord
	if err := c.call(ctx, RootPath, ManagerIface+".ListEvents", since).Store(&recs); err != nil {
		return nil, c.mapError(err)
	}
	return recs, nil
}

// AcknowledgeReset declares a latched breach remediated (counter "" = every
// latched counter of the port).
func (c *Client) AcknowledgeReset(ctx context.Context, device string, port int, counter string) error {
	if port < 0 || port > 1<<31 {
		return fmt.Errorf("%w: port %d out of range", ErrInvalidArgument, port)
	}
	return c.mapError(c.call(ctx, RootPath, ManagerIface+".AcknowledgeReset", device, uint32(port), counter).Err)
}

// RetryRejected asks the daemon to offer the events its sinks rejected as
// invalid to them again; it returns how many were parked.
func (c *Client) RetryRejected(ctx context.Context) (uint32, error) {
	var n uint32
	if err := c.call(ctx, RootPath, ManagerIface+".RetryRejected").Store(&n); err != nil {
		return 0, c.mapError(err)
	}
	return n, nil
}

// Reload asks the daemon to re-read its configuration. An error wrapping
// ErrConfigRefused carries the validation message; the old config stays.
func (c *Client) Reload(ctx context.Context) error {
	return c.mapError(c.call(ctx, RootPath, ManagerIface+".Reload").Err)
}

// WatchEvents subscribes to the HealthEvent signal. Records arrive on the
// returned channel until ctx ends; then the subscription is removed and
// the channel closed. Subscribe before ListEvents to miss nothing, and drop
// duplicates by Seq.
func (c *Client) WatchEvents(ctx context.Context) (<-chan EventRecord, error) {
	opts := []dbus.MatchOption{
		dbus.WithMatchSender(c.busName),
		dbus.WithMatchObjectPath(RootPath),
		dbus.WithMatchInterface(ManagerIface),
		dbus.WithMatchMember("HealthEvent"),
	}
	// godbus hands signals that do not fit a full channel to one goroutine
	// each, which can reorder them; a deep buffer keeps bursts in order.
	return watchSignals(ctx, c, opts, 1024, 64, decodeHealthEvent)
}

// watchSignals subscribes to the signals opts match and delivers what
// decode accepts until ctx ends; then the match and the channel are
// removed and the returned channel closed.
func watchSignals[T any](ctx context.Context, c *Client, opts []dbus.MatchOption, rawDepth, outDepth int,
	decode func(*dbus.Signal) (T, bool)) (<-chan T, error) {
	if err := c.conn.AddMatchSignalContext(ctx, opts...); err != nil {
		return nil, c.mapError(err)
	}
	raw := make(chan *dbus.Signal, rawDepth)
	c.conn.Signal(raw)
	out := make(chan T, outDepth)
	go func() {
		defer close(out)
		defer c.conn.RemoveSignal(raw)
		defer func() { _ = c.conn.RemoveMatchSignal(opts...) }()
		for {
			select {
			case <-ctx.Done():
				return
			case sig, ok := <-raw:
				if !ok {
					return
				}
				v, ok := decode(sig)
				if !ok {
					continue
				}
				select {
				case out <- v:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

func decodeHealthEvent(sig *dbus.Signal) (EventRecord, bool) {
	if sig.Name != healthSignal || sig.Path != RootPath || len(sig.Body) != 8 {
		return EventRecord{}, false
	}
	seq, ok1 := sig.Body[0].(uint64)
	js, ok2 := sig.Body[7].(string)
	if !ok1 || !ok2 {
		return EventRecord{}, false
	}
	return EventRecord{Seq: seq, JSON: js}, true
}

// varMap reads typed values out of a property dictionary; a missing or
// mistyped entry reads as the zero value, so an older or newer daemon with
// other properties still decodes.
type varMap map[string]dbus.Variant

func get[T any](m varMap, k string) T {
	var zero T
	v, ok := m[k]
	if !ok {
		return zero
	}
	t, ok := v.Value().(T)
	if !ok {
		return zero
	}
	return t
}

func decodeManager(raw map[string]dbus.Variant) ManagerView {
	m := varMap(raw)
	return ManagerView{
		Version:          get[string](m, "Version"),
		NodeName:         get[string](m, "NodeName"),
		BootID:           get[string](m, "BootID"),
		PollIntervalUSec: get[uint64](m, "PollIntervalUSec"),
		LastPollUSec:     get[uint64](m, "LastPollUSec"),
		Healthy:          get[bool](m, "Healthy"),
		Verdict:          get[string](m, "Verdict"),
		FatalPorts:       nonNil(get[[]string](m, "FatalPorts")),
		DegradedPorts:    nonNil(get[[]string](m, "DegradedPorts")),
		Conditions:       decodeConditions(m["Conditions"]),
		ConfigPath:       get[string](m, "ConfigPath"),
		ConfigGeneration: get[uint64](m, "ConfigGeneration"),
		LastReloadError:  get[string](m, "LastReloadError"),
		MonitoredPorts:   get[uint32](m, "MonitoredPorts"),
		MonitoredNICs:    get[uint32](m, "MonitoredNICs"),
		Ready:            get[bool](m, "Ready"),
		RejectedEvents:   get[uint32](m, "RejectedEvents"),
	}
}

func decodePort(raw map[string]dbus.Variant) PortView {
	m := varMap(raw)
	p := PortView{
		Device:          get[string](m, "Device"),
		Port:            int32(get[uint32](m, "Port")),
		LinkLayer:       get[string](m, "LinkLayer"),
		Role:            get[string](m, "Role"),
		RoleReason:      get[string](m, "RoleReason"),
		NetDev:          get[string](m, "NetDev"),
		PCIAddress:      get[string](m, "PCIAddress"),
		NUMANode:        get[int32](m, "NUMANode"),
		NodeGUID:        get[string](m, "NodeGUID"),
		PortGUID:        get[string](m, "PortGUID"),
		GPUs:            get[string](m, "GPUs"),
		LinkDownReason:  get[string](m, "LinkDownReason"),
		Rate:            get[string](m, "Rate"),
		State:           get[string](m, "State"),
		PhysState:       get[string](m, "PhysState"),
		Up:              get[bool](m, "Up"),
		RateGbps:        get[float64](m, "RateGbps"),
		Healthy:         get[bool](m, "Healthy"),
		Fatal:           get[bool](m, "Fatal"),
		Verdict:         get[string](m, "Verdict"),
		Conditions:      decodeConditions(m["Conditions"]),
		Message:         get[string](m, "Message"),
		LastChangeUSec:  get[uint64](m, "LastChangeUSec"),
		Sanity:          nonNil(get[[]string](m, "Sanity")),
		Counters:        []CounterView{},
		FirmwareVersion: get[string](m, "FirmwareVersion"),
		BoardID:         get[string](m, "BoardID"),
		PeerGUID:        get[string](m, "PeerGUID"),
		PeerPort:        get[uint32](m, "PeerPort"),
		PeerName:        get[string](m, "PeerName"),
		PeerCounters:    get[map[string]uint64](m, "PeerCounters"),
		PeerReadUSec:    get[uint64](m, "PeerReadUSec"),
		PeerReadErrors:  get[uint64](m, "PeerReadErrors"),
		PeerReadError:   get[string](m, "PeerReadError"),
		CableDirection:  get[string](m, "CableDirection"),
		CableSuspect:    get[string](m, "CableSuspect"),
		CablePart:       get[string](m, "CablePart"),
		CableEvidence:   nonNil(get[[]string](m, "CableEvidence")),
	}
	if len(p.PeerCounters) == 0 {
		p.PeerCounters = nil
	}
	p.RoCEClass, p.RoCEEvidence = get[string](m, "RoCEClass"), get[string](m, "RoCEEvidence")
	p.RoCEPauseLostGbps, p.RoCEPauseLostPercent = get[float64](m, "RoCEPauseLostGbps"), get[float64](m, "RoCEPauseLostPercent")
	for name, f := range get[map[string]map[string]dbus.Variant](m, "Counters") {
		fm := varMap(f)
		p.Counters = append(p.Counters, CounterView{
			Name:              name,
			Value:             get[uint64](fm, counterValue),
			Rate:              get[float64](fm, counterRate),
			Unit:              get[string](fm, counterUnit),
			ThresholdType:     get[string](fm, counterThresholdType),
			Threshold:         get[float64](fm, counterThreshold),
			Fatal:             get[bool](fm, counterFatal),
			Breached:          get[bool](fm, counterBreached),
			BreachedSinceUSec: get[uint64](fm, counterBreachedSinceUSec),
			Saturated:         get[bool](fm, counterSaturated),
			LostGbps:          get[float64](fm, counterLostGbps),
			LostPercent:       get[float64](fm, counterLostPercent),
		})
	}
	sort.Slice(p.Counters, func(i, j int) bool { return p.Counters[i].Name < p.Counters[j].Name })
	return p
}

// naturalLess orders device names as every view lists them
// (health.CompareDevices).
func naturalLess(a, b string) bool { return health.CompareDevices(a, b) < 0 }

// WatchDaemon reports the daemon leaving (false) and coming back (true) on
// the bus, from NameOwnerChanged, until ctx ends.
func (c *Client) WatchDaemon(ctx context.Context) (<-chan bool, error) {
	opts := []dbus.MatchOption{
		dbus.WithMatchSender("org.freedesktop.DBus"),
		dbus.WithMatchInterface("org.freedesktop.DBus"),
		dbus.WithMatchMember("NameOwnerChanged"),
		dbus.WithMatchArg(0, c.busName),
	}
	return watchSignals(ctx, c, opts, 16, 16, func(sig *dbus.Signal) (bool, bool) {
		if sig.Name != "org.freedesktop.DBus.NameOwnerChanged" || len(sig.Body) != 3 || sig.Body[0] != c.busName {
			return false, false
		}
		owner, _ := sig.Body[2].(string)
		return owner != "", true
	})
}
