package dbusapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/internal/repeats"
)

// Options tune Serve. The zero value is the production configuration.
type Options struct {
	// AdminGroup may call AcknowledgeReset and Reload besides root.
	// Default "nichealth-admin".
	AdminGroup string
	// RingSize bounds the events ListEvents can return. Default 1024.
	RingSize int
	// Logger receives the server's own diagnostics. Default: discard.
	Logger *slog.Logger
	// BusName is the well-known name to own. Default org.nichealth.NicHealth1.
	BusName string
	// Attach, when set, is called with the server once its objects are
	// exported and before it asks for BusName: what it puts in place
	// (ListEvents's history, the daemon posting to the server) is there
	// before any client can reach the server by name. Clients find a
	// daemon by its name, so one that answers "ready" also has its
	// history. If the name then cannot be owned, Detach is called before
	// Serve returns its error.
	Attach, Detach func(*Server)
}

// Server exports one Backend on one bus connection. Its methods are safe for
// concurrent use.
type Server struct {
	conn    *dbus.Conn
	b       Backend
	opts    Options
	log     *slog.Logger
	mgrDefs []propDef[ManagerView]
	prtDefs []propDef[PortView]
	mgrMeta []propMeta
	prtMeta []propMeta
	// adminGroup is Options.AdminGroup until SetAdminGroup changes it.
	adminGroup atomic.Pointer[string]
	// denials collapses repeated denied and refused calls in the log.
	denials repeats.Limiter

	// refreshMu serialises Refresh, Close and the exports they do, so
	// signals leave in the order the state changed.
	refreshMu sync.Mutex
	// closed is atomic so Publish can test it without refreshMu: Refresh
	// holds refreshMu while it waits for the Backend, and the daemon may
	// publish while holding its own lock.
	closed atomic.Bool
	// publishMu keeps HealthEvent signals in ring order.
	publishMu sync.Mutex

	// mu guards the exported snapshot read by D-Bus goroutines. It is never
	// held while calling the Backend or sending on the bus.
	mu    sync.RWMutex
	mgr   []any
	ports map[dbus.ObjectPath]*portObj
	order []dbus.ObjectPath
	ring  ring

	out *sender
}

type portObj struct {
	vals []any // in prtDefs order
}

// Serve exports the API for b on conn and then requests the bus name, so
// the name appears only once every object answers. Outcomes:
//   - (*Server, nil): exported and the name is owned;
//   - (nil, err): the name is owned by another connection (another
//     nichealthd?), the bus policy denies owning it (policy file not
//     installed, wrong user), or the bus failed; nothing stays exported.
//
// Serve does not close conn; Close releases the name and the objects.
func Serve(conn *dbus.Conn, b Backend, opts Options) (*Server, error) {
	if conn == nil || b == nil {
		return nil, errors.New("dbusapi.Serve: nil connection or backend")
	}
	if opts.AdminGroup == "" {
		opts.AdminGroup = DefaultGroup
	}
	if opts.RingSize <= 0 {
		opts.RingSize = DefaultRing
	}
	if opts.BusName == "" {
		opts.BusName = BusName
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		conn: conn, b: b, opts: opts, log: log,
		mgrDefs: managerProps(), prtDefs: portProps(),
		ports: map[dbus.ObjectPath]*portObj{},
		ring:  newRing(opts.RingSize),
		out:   newSender(),
	}
	s.denials.Window = time.Minute
	s.SetAdminGroup(opts.AdminGroup)
	s.mgrMeta = metaOf(s.mgrDefs)
	s.prtMeta = metaOf(s.prtDefs)

	// Fail on a broken table before anything is visible on the bus.
	for _, ifs := range [][]ifaceDef{s.rootIfaces(), s.portIfaces(), s.nodeIfaces()} {
		if _, err := introspectXML(ifs, nil); err != nil {
			return nil, err
		}
	}

	s.refreshMu.Lock()
	mv := b.Manager()
	s.mgr = valuesOf(s.mgrDefs, &mv)
	added, _, _ := s.applyPorts(b.Ports())
	s.refreshMu.Unlock()
	if err := s.exportAll(); err != nil {
		s.unexportAll()
		return nil, err
	}

	if opts.Attach != nil {
		opts.Attach(s)
	}
	reply, err := conn.RequestName(opts.BusName, dbus.NameFlagDoNotQueue)
	if err != nil {
		s.detach()
		s.unexportAll()
		var de dbus.Error
		if errors.As(err, &de) && de.Name == "org.freedesktop.DBus.Error.AccessDenied" {
			return nil, fmt.Errorf("the system bus policy does not let this user own %s: install packaging/dbus/%s.conf as /usr/share/dbus-1/system.d/%s.conf and run the daemon as root or user nichealthd (%v)",
				opts.BusName, BusName, BusName, err)
		}
		return nil, fmt.Errorf("request bus name %s: %w", opts.BusName, err)
	}
	switch reply {
	case dbus.RequestNameReplyPrimaryOwner, dbus.RequestNameReplyAlreadyOwner:
	default:
		s.detach()
		s.unexportAll()
		return nil, fmt.Errorf("bus name %s is already owned by another connection (%s): is another nichealthd running? Check with busctl status %s",
			opts.BusName, reply, opts.BusName)
	}
	log.Info("D-Bus API exported", "name", opts.BusName, "path", string(RootPath), "ports", len(added))
	go s.runSender()
	return s, nil
}

// detach undoes Options.Attach for a server that never owned its name.
func (s *Server) detach() {
	if s.opts.Attach != nil && s.opts.Detach != nil {
		s.opts.Detach(s)
	}
}

// Close releases the bus name and unexports every object. It does not close
// the connection. Refresh and Publish do nothing afterwards.
func (s *Server) Close() error {
	s.out.stop()
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	_, err := s.conn.ReleaseName(s.opts.BusName)
	s.unexportAll()
	if err != nil {
		return fmt.Errorf("release bus name %s: %w", s.opts.BusName, err)
	}
	return nil
}

// Refresh reads the Backend and brings the exported objects in line with
// it: InterfacesAdded/InterfacesRemoved for ports that appeared or went, and
// PropertiesChanged carrying only the properties whose value changed (none
// when nothing did). Call it after every poll cycle and every reload. It
// compares against the last exported values, so it is cheap when nothing
// changed, and it never holds a lock that D-Bus readers wait on while it
// talks to the bus.
func (s *Server) Refresh() {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	if s.closed.Load() {
		return
	}
	mv := s.b.Manager()
	pvs := s.b.Ports()
	newMgr := valuesOf(s.mgrDefs, &mv)

	s.mu.Lock()
	mgrChanged := changed(s.mgrMeta, s.mgr, newMgr)
	s.mgr = newMgr
	s.mu.Unlock()

	added, removed, portChanges := s.applyPorts(pvs)

	for _, r := range removed {
		s.emit(RootPath, objectManager+".InterfacesRemoved", r, s.interfaceNames(s.portIfaces()))
	}
	for _, p := range added {
		if ifs, ok := s.managedInterfaces(p); ok {
			s.emit(RootPath, objectManager+".InterfacesAdded", p, ifs)
		}
	}
	for _, pc := range portChanges {
		s.emit(pc.path, propertiesIf+".PropertiesChanged", PortIface, pc.changed, []string{})
	}
	if len(mgrChanged) > 0 {
		s.emit(RootPath, propertiesIf+".PropertiesChanged", ManagerIface, mgrChanged, []string{})
	}
}

type portChange struct {
	path    dbus.ObjectPath
	changed map[string]dbus.Variant
}

// applyPorts swaps in the new port set and reports what moved. The caller
// holds refreshMu.
func (s *Server) applyPorts(pvs []PortView) (added, removed []dbus.ObjectPath, changes []portChange) {
	next := make(map[dbus.ObjectPath]*portObj, len(pvs))
	order := make([]dbus.ObjectPath, 0, len(pvs))
	for i := range pvs {
		pv := &pvs[i]
		p := PortPath(pv.Device, int(pv.Port))
		if _, dup := next[p]; dup {
			s.log.Warn("backend listed a port twice; keeping the first", "device", pv.Device, "port", pv.Port)
			continue
		}
		next[p] = &portObj{vals: valuesOf(s.prtDefs, pv)}
		order = append(order, p)
	}

	s.mu.Lock()
	for _, p := range order {
		old, ok := s.ports[p]
		if !ok {
			added = append(added, p)
			continue
		}
		nw, ok := next[p]
		if !ok {
			continue
		}
		if c := changed(s.prtMeta, old.vals, nw.vals); len(c) > 0 {
			changes = append(changes, portChange{p, c})
		}
	}
	for _, p := range s.order {
		if _, ok := next[p]; !ok {
			removed = append(removed, p)
		}
	}
	s.ports, s.order = next, order
	s.mu.Unlock()
	return added, removed, changes
}

// changed lists the signalled properties whose value differs.
func changed(meta []propMeta, old, cur []any) map[string]dbus.Variant {
	var out map[string]dbus.Variant
	for i, m := range meta {
		if !m.emits || (old != nil && sameValue(old[i], cur[i])) {
			continue
		}
		if out == nil {
			out = map[string]dbus.Variant{}
		}
		out[m.name] = dbus.MakeVariantWithSignature(wireValue(cur[i]), dbus.ParseSignatureMust(m.sig))
	}
	return out
}

func (s *Server) emit(path dbus.ObjectPath, name string, args ...any) {
	if err := s.conn.Emit(path, name, args...); err != nil {
		s.log.Warn("cannot emit D-Bus signal", "path", string(path), "signal", name, "err", err)
	}
}

// Publish emits the HealthEvent signal for ev and appends it to the ring
// that ListEvents reads. seq is the daemon's event sequence number; it
// should grow with every event so that ListEvents(since) can resume.
// Remember keeps an event for ListEvents without signalling it: the daemon
// backfills, oldest first, the events it emitted while it was not on the
// bus (before the first connection, or while the bus restarted).
func (s *Server) Remember(ev event.Event, seq uint64) {
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.ring.add(EventRecord{Seq: seq, JSON: string(b)})
	s.mu.Unlock()
}

func (s *Server) Publish(ev event.Event, seq uint64) {
	sg, ok := s.remember(ev, seq)
	if !ok || s.closed.Load() {
		return
	}
	s.publishMu.Lock()
	defer s.publishMu.Unlock()
	a := sg.ev
	s.emit(RootPath, healthSignal, seq, a.check, a.device, a.port, a.fatal, a.healthy, a.message, a.asJSON)
}

// Post is Publish without waiting for the bus: the event enters the ring
// at once (ListEvents sees it) and the signal is sent from the server's
// own goroutine. It never blocks, also when the bus is frozen.
func (s *Server) Post(ev event.Event, seq uint64) {
	if sg, ok := s.remember(ev, seq); ok && !s.closed.Load() {
		s.out.push(sg)
	}
}

// RefreshLater asks for a Refresh from the server's own goroutine and
// returns at once.
func (s *Server) RefreshLater() {
	if !s.closed.Load() {
		s.out.wantRefresh()
	}
}

func (s *Server) remember(ev event.Event, seq uint64) (queuedSignal, bool) {
	j, err := encodeEvent(ev)
	if err != nil {
		s.log.Error("cannot encode event for D-Bus", "seq", seq, "err", err)
		return queuedSignal{}, false
	}
	port := uint32(0)
	if n, err := strconv.ParseUint(ev.Port(), 10, 32); err == nil {
		port = uint32(n)
	}
	rec := EventRecord{Seq: seq, JSON: j}
	s.mu.Lock()
	s.ring.add(rec)
	s.mu.Unlock()
	return queuedSignal{rec: rec, ev: signalArgs{check: ev.CheckName, device: ev.Device(), port: port,
		fatal: ev.IsFatal, healthy: ev.IsHealthy, message: ev.Message, asJSON: j}}, true
}

// export is one registration with godbus.
type export struct {
	path    dbus.ObjectPath
	iface   ifaceDef
	subtree bool
}

// exports lists every registration, made once by Serve. Port objects are
// served by one subtree registration at PortPathBase whose handlers look
// the port up in the snapshot, so ports coming and going never touch
// godbus's handler tables: those are read without locks by godbus's own
// default introspection, and changing them while a client walks the tree
// could crash the process. For the same reason every Introspectable is a
// subtree registration, so godbus's default one is never used beneath our
// nodes.
func (s *Server) exports() []export {
	var out []export
	for _, a := range ancestors() {
		for _, d := range s.nodeIfaces() {
			out = append(out, export{a, d, true})
		}
	}
	for _, d := range s.rootIfaces() {
		out = append(out, export{RootPath, d, d.name == introspectIf})
	}
	for _, d := range s.nodeIfaces() {
		out = append(out, export{PortPathBase, d, true})
	}
	for _, d := range s.portIfaces() {
		if d.name != introspectIf {
			out = append(out, export{PortPathBase, d, true})
		}
	}
	return out
}

func (s *Server) exportAll() error {
	for _, e := range s.exports() {
		if e.iface.builtin {
			continue
		}
		var err error
		if e.subtree {
			err = s.conn.ExportSubtreeMethodTable(e.iface.methodTable(), e.path, e.iface.name)
		} else {
			err = s.conn.ExportMethodTable(e.iface.methodTable(), e.path, e.iface.name)
		}
		if err != nil {
			return fmt.Errorf("export %s on %s: %w", e.iface.name, e.path, err)
		}
	}
	return nil
}

func (s *Server) unexportAll() {
	for _, e := range s.exports() {
		if !e.iface.builtin {
			_ = s.conn.Export(nil, e.path, e.iface.name)
		}
	}
}

func (s *Server) interfaceNames(ifaces []ifaceDef) []string {
	out := make([]string, len(ifaces))
	for i, d := range ifaces {
		out[i] = d.name
	}
	return out
}
