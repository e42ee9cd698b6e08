package dbusapi

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/nichealth/nichealthd/topology"
)

// Standard D-Bus error names used by the property and object code.
const (
	errUnknownObject    = "org.freedesktop.DBus.Error.UnknownObject"
	errUnknownInterface = "org.freedesktop.DBus.Error.UnknownInterface"
	errUnknownProperty  = "org.freedesktop.DBus.Error.UnknownProperty"
	errPropertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
	errFailed           = "org.freedesktop.DBus.Error.Failed"
)

func newError(name, format string, a ...any) *dbus.Error {
	return dbus.NewError(name, []any{fmt.Sprintf(format, a...)})
}

// rootIfaces describes /org/nichealth/NicHealth1.
func (s *Server) rootIfaces() []ifaceDef {
	return []ifaceDef{
		peerIface(),
		s.introspectableIface(),
		s.propertiesIface(),
		{name: objectManager, signals: objectManagerSignals(), methods: []methodDef{
			{name: "GetManagedObjects", out: []string{"object_paths_interfaces_and_properties"}, fn: s.getManagedObjects},
		}},
		{name: ManagerIface, props: s.mgrMeta, signals: []signalDef{healthEventSignal()}, methods: []methodDef{
			{name: "Reload", fn: s.reload},
			{name: "ListEvents", in: []string{"since"}, out: []string{"events"}, fn: s.listEvents},
			{name: "AcknowledgeReset", in: []string{"device", "port", "counter"}, fn: s.acknowledgeReset},
			{name: "GetPort", in: []string{"device", "port"}, out: []string{"object_path"}, fn: s.getPort},
			{name: "RetryRejected", out: []string{"parked"}, fn: s.retryRejected},
		}},
	}
}

// portIfaces describes every port object.
func (s *Server) portIfaces() []ifaceDef {
	return []ifaceDef{
		peerIface(),
		s.introspectableIface(),
		s.propertiesIface(),
		{name: PortIface, props: s.prtMeta},
	}
}

// nodeIfaces describes the pure tree nodes (/, /org, .../port) that exist
// so that busctl tree can walk down to the objects.
func (s *Server) nodeIfaces() []ifaceDef {
	return []ifaceDef{peerIface(), s.introspectableIface()}
}

// pathOf is the object a call was addressed to. The handlers are exported
// once for a whole subtree and find their object from the message, so the
// set of exports never changes while the server runs.
func pathOf(msg dbus.Message) dbus.ObjectPath {
	p, _ := msg.Headers[dbus.FieldPath].Value().(dbus.ObjectPath)
	return p
}

func (s *Server) introspectableIface() ifaceDef {
	return ifaceDef{name: introspectIf, methods: []methodDef{
		{name: "Introspect", out: []string{"xml_data"}, fn: func(msg dbus.Message) (string, *dbus.Error) {
			return s.introspect(pathOf(msg))
		}},
	}}
}

// ancestors lists the tree nodes above RootPath: /, /org, /org/nichealth.
func ancestors() []dbus.ObjectPath {
	out := []dbus.ObjectPath{"/"}
	parts := strings.Split(strings.TrimPrefix(string(RootPath), "/"), "/")
	for i := 1; i < len(parts); i++ {
		out = append(out, dbus.ObjectPath("/"+strings.Join(parts[:i], "/")))
	}
	return out
}

func (s *Server) introspect(p dbus.ObjectPath) (string, *dbus.Error) {
	var ifaces []ifaceDef
	var children []string
	switch {
	case p == RootPath:
		ifaces = s.rootIfaces()
		s.mu.RLock()
		if len(s.order) > 0 {
			children = []string{"port"}
		}
		s.mu.RUnlock()
	case p == PortPathBase:
		ifaces = s.nodeIfaces()
		s.mu.RLock()
		for _, op := range s.order {
			children = append(children, strings.TrimPrefix(string(op), string(PortPathBase)+"/"))
		}
		s.mu.RUnlock()
	case strings.HasPrefix(string(p), string(PortPathBase)+"/"):
		if !s.exists(p) {
			return "", newError(errUnknownObject, "object %s does not exist (no such monitored port)", p)
		}
		ifaces = s.portIfaces()
	default:
		for _, a := range ancestors() {
			if a != p {
				continue
			}
			ifaces = s.nodeIfaces()
			next := strings.TrimPrefix(strings.TrimPrefix(string(RootPath), string(a)), "/")
			children = []string{strings.SplitN(next, "/", 2)[0]}
		}
		if ifaces == nil {
			return "", newError(errUnknownObject, "object %s does not exist", p)
		}
	}
	x, err := introspectXML(ifaces, children)
	if err != nil {
		return "", dbus.MakeFailedError(err)
	}
	return x, nil
}

func (s *Server) exists(p dbus.ObjectPath) bool {
	if p == RootPath {
		return true
	}
	s.mu.RLock()
	_, ok := s.ports[p]
	s.mu.RUnlock()
	return ok
}

func (s *Server) propertiesIface() ifaceDef {
	return ifaceDef{name: propertiesIf, signals: []signalDef{propertiesChangedSignal()}, methods: []methodDef{
		{name: "Get", in: []string{"interface_name", "property_name"}, out: []string{"value"},
			fn: func(msg dbus.Message, iface, name string) (dbus.Variant, *dbus.Error) {
				return s.getProperty(pathOf(msg), iface, name)
			}},
		{name: "GetAll", in: []string{"interface_name"}, out: []string{"props"},
			fn: func(msg dbus.Message, iface string) (map[string]dbus.Variant, *dbus.Error) {
				return s.getAll(pathOf(msg), iface)
			}},
		{name: "Set", in: []string{"interface_name", "property_name", "value"},
			fn: func(msg dbus.Message, iface, name string, _ dbus.Variant) *dbus.Error {
				return s.setProperty(pathOf(msg), iface, name)
			}},
	}}
}

// lookup finds the property table and values of the object at p for iface.
// The caller holds s.mu for reading. An interface of the object that has no
// properties yields (nil, nil, nil).
func (s *Server) lookup(p dbus.ObjectPath, iface string) ([]propMeta, []any, *dbus.Error) {
	var own string
	var meta []propMeta
	var vals []any
	if p == RootPath {
		own, meta, vals = ManagerIface, s.mgrMeta, s.mgr
	} else {
		obj, ok := s.ports[p]
		if !ok {
			return nil, nil, newError(errUnknownObject, "object %s does not exist (no such monitored port)", p)
		}
		own, meta, vals = PortIface, s.prtMeta, obj.vals
	}
	// An empty interface name means "whichever interface has it"
	// (D-Bus specification, org.freedesktop.DBus.Properties).
	if iface == own || iface == "" {
		return meta, vals, nil
	}
	switch iface {
	case propertiesIf, introspectIf, peerIf:
		return nil, nil, nil
	case objectManager:
		if p == RootPath {
			return nil, nil, nil
		}
	}
	return nil, nil, newError(errUnknownInterface, "object %s has no interface %s", p, iface)
}

func (s *Server) getProperty(p dbus.ObjectPath, iface, name string) (dbus.Variant, *dbus.Error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	meta, vals, derr := s.lookup(p, iface)
	if derr != nil {
		return dbus.Variant{}, derr
	}
	for i, m := range meta {
		if m.name == name {
			return dbus.MakeVariantWithSignature(wireValue(vals[i]), dbus.ParseSignatureMust(m.sig)), nil //nolint:nilaway // lookup returns meta and vals of one table, equal in length (both nil for an interface without properties, when this loop does not run)
		}
	}
	return dbus.Variant{}, newError(errUnknownProperty, "interface %s has no property %q", ifaceOr(iface, p), name)
}

func (s *Server) getAll(p dbus.ObjectPath, iface string) (map[string]dbus.Variant, *dbus.Error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	meta, vals, derr := s.lookup(p, iface)
	if derr != nil {
		return nil, derr
	}
	return variants(meta, vals), nil
}

func variants(meta []propMeta, vals []any) map[string]dbus.Variant {
	out := make(map[string]dbus.Variant, len(meta))
	for i, m := range meta {
		out[m.name] = dbus.MakeVariantWithSignature(wireValue(vals[i]), dbus.ParseSignatureMust(m.sig)) //nolint:nilaway // meta and vals are one table's, equal in length
	}
	return out
}

func (s *Server) setProperty(p dbus.ObjectPath, iface, name string) *dbus.Error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	meta, _, derr := s.lookup(p, iface)
	if derr != nil {
		return derr
	}
	for _, m := range meta {
		if m.name == name {
			return newError(errPropertyReadOnly, "property %s is read-only: nichealthd's state comes from the hardware and its configuration file", name)
		}
	}
	return newError(errUnknownProperty, "interface %s has no property %q", ifaceOr(iface, p), name)
}

func ifaceOr(iface string, p dbus.ObjectPath) string {
	if iface != "" {
		return iface
	}
	if p == RootPath {
		return ManagerIface
	}
	return PortIface
}

// managedInterfaces is one entry of GetManagedObjects / InterfacesAdded:
// every interface of the object, with its properties (empty for the
// standard interfaces), as sd-bus reports them.
func (s *Server) managedInterfaces(p dbus.ObjectPath) (map[string]map[string]dbus.Variant, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	obj, ok := s.ports[p]
	if !ok {
		return nil, false
	}
	out := map[string]map[string]dbus.Variant{}
	for _, d := range s.portIfaces() {
		out[d.name] = map[string]dbus.Variant{}
	}
	out[PortIface] = variants(s.prtMeta, obj.vals)
	return out, true
}

func (s *Server) getManagedObjects() (map[dbus.ObjectPath]map[string]map[string]dbus.Variant, *dbus.Error) {
	s.mu.RLock()
	paths := append([]dbus.ObjectPath(nil), s.order...)
	s.mu.RUnlock()
	out := make(map[dbus.ObjectPath]map[string]map[string]dbus.Variant, len(paths))
	for _, p := range paths {
		if ifs, ok := s.managedInterfaces(p); ok {
			out[p] = ifs
		}
	}
	return out, nil
}

func (s *Server) listEvents(since uint64) ([]EventRecord, *dbus.Error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ring.since(since), nil
}

func (s *Server) getPort(device string, port uint32) (dbus.ObjectPath, *dbus.Error) {
	p := PortPath(device, int(port))
	if !s.exists(p) {
		return "", newError(ErrNameNoSuchPort, "no monitored port %s port %d (nichealthctl ports lists them)", device, port)
	}
	return p, nil
}

func (s *Server) reload(sender dbus.Sender) *dbus.Error {
	if _, derr := s.authorize(sender, "Reload"); derr != nil {
		return derr
	}
	err := s.b.Reload()
	// Readers of ConfigGeneration or LastReloadError right after Reload
	// returns see the outcome without waiting for the next poll.
	s.Refresh()
	if err != nil {
		if ok, n := s.denials.Note("Reload refused "+err.Error(), time.Now()); ok {
			s.log.Warn("reload requested over D-Bus was refused", "sender", string(sender), "err", err, "repeats", n)
		}
		return toDBusError(err, ErrNameConfigRefused)
	}
	return nil
}

func (s *Server) acknowledgeReset(sender dbus.Sender, device string, port uint32, counter string) *dbus.Error {
	uid, derr := s.authorize(sender, "AcknowledgeReset")
	if derr != nil {
		return derr
	}
	if strings.TrimSpace(device) == "" {
		return newError(ErrNameInvalidArgument, "AcknowledgeReset: device must not be empty (e.g. mlx5_0)")
	}
	if port == 0 && !topology.IsPCIAddress(device) {
		// Port 0 goes with a PCI address: a NIC function removed on
		// purpose, which has no port to name.
		return newError(ErrNameInvalidArgument, "AcknowledgeReset: port numbers start at 1 (port 0 only with a PCI address, e.g. 0000:3b:00.0)")
	}
	if err := s.b.AcknowledgeReset(device, int(port), counter, uid); err != nil {
		return toDBusError(err, errFailed)
	}
	s.log.Info("reset acknowledged over D-Bus", "device", device, "port", port, "counter", counter, "uid", uid)
	s.Refresh()
	return nil
}

func (s *Server) retryRejected(sender dbus.Sender) (uint32, *dbus.Error) {
	uid, derr := s.authorize(sender, "RetryRejected")
	if derr != nil {
		return 0, derr
	}
	n, err := s.b.RetryRejected(uid)
	if err != nil {
		return 0, toDBusError(err, errFailed)
	}
	s.log.Info("retry of rejected events requested over D-Bus", "parked", n, "uid", uid)
	return n, nil
}

// toDBusError maps the sentinel errors to their D-Bus names; anything else
// gets fallback. The message is the error's own text, which names the
// device, port and counter.
func toDBusError(err error, fallback string) *dbus.Error {
	name := fallback
	switch {
	case errors.Is(err, ErrNoSuchPort):
		name = ErrNameNoSuchPort
	case errors.Is(err, ErrNotLatched):
		name = ErrNameNotLatched
	case errors.Is(err, ErrInvalidArgument):
		name = ErrNameInvalidArgument
	case errors.Is(err, ErrAccessDenied):
		name = ErrNameAccessDenied
	case errors.Is(err, ErrConfigRefused):
		name = ErrNameConfigRefused
	}
	return dbus.NewError(name, []any{err.Error()})
}
