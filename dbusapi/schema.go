package dbusapi

import (
	"encoding/xml"
	"fmt"
	"reflect"
	"slices"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/introspect"
)

const emitsChangedAnnotation = "org.freedesktop.DBus.Property.EmitsChangedSignal"

// propDef is one read-only property: its wire signature, whether changes are
// signalled, and how to read it from a view. One table per interface drives
// Get/GetAll, PropertiesChanged, GetManagedObjects and the introspection XML.
type propDef[V any] struct {
	name string
	sig  string
	// emits=false marks values that move on every poll (counter values, the
	// poll timestamp): signalling them would put one message per port per
	// poll on the system bus, so they carry EmitsChangedSignal=false and
	// clients read them when they need them, as systemd does for CPU usage.
	emits bool
	get   func(*V) any
}

// counterList defers building the Counters dictionary until a client reads
// it: Refresh runs after every poll and must stay cheap.
type counterList []CounterView

// Counter fields inside the Counters property, in documentation order.
const (
	counterValue             = "Value"
	counterRate              = "Rate"
	counterUnit              = "Unit"
	counterThresholdType     = "ThresholdType"
	counterThreshold         = "Threshold"
	counterFatal             = "Fatal"
	counterBreached          = "Breached"
	counterBreachedSinceUSec = "BreachedSinceUSec"
	counterSaturated         = "Saturated"
	counterLostGbps          = "LostGbps"
	counterLostPercent       = "LostPercent"
)

// wire renders the counters as a{sa{sv}}: counter name -> field -> value.
// A dictionary rather than a struct array because busctl then prints every
// field with its name, and a field added later does not change the
// property's signature (old clients keep working).
func (cl counterList) wire() map[string]map[string]dbus.Variant {
	m := make(map[string]map[string]dbus.Variant, len(cl))
	for _, c := range cl {
		m[c.Name] = map[string]dbus.Variant{
			counterValue:             dbus.MakeVariant(c.Value),
			counterRate:              dbus.MakeVariant(c.Rate),
			counterUnit:              dbus.MakeVariant(c.Unit),
			counterThresholdType:     dbus.MakeVariant(c.ThresholdType),
			counterThreshold:         dbus.MakeVariant(c.Threshold),
			counterFatal:             dbus.MakeVariant(c.Fatal),
			counterBreached:          dbus.MakeVariant(c.Breached),
			counterBreachedSinceUSec: dbus.MakeVariant(c.BreachedSinceUSec),
			counterSaturated:         dbus.MakeVariant(c.Saturated),
			counterLostGbps:          dbus.MakeVariant(c.LostGbps),
			counterLostPercent:       dbus.MakeVariant(c.LostPercent),
		}
	}
	return m
}

// wireValue turns a stored property value into what goes on the bus.
func wireValue(v any) any {
	switch l := v.(type) {
	case counterList:
		return l.wire()
	case conditionList:
		return l.wire()
	}
	return v
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func managerProps() []propDef[ManagerView] {
	return []propDef[ManagerView]{
		{"Version", "s", true, func(m *ManagerView) any { return m.Version }},
		{"NodeName", "s", true, func(m *ManagerView) any { return m.NodeName }},
		{"BootID", "s", true, func(m *ManagerView) any { return m.BootID }},
		{"PollIntervalUSec", "t", true, func(m *ManagerView) any { return m.PollIntervalUSec }},
		{"LastPollUSec", "t", false, func(m *ManagerView) any { return m.LastPollUSec }},
		{"Healthy", "b", true, func(m *ManagerView) any { return m.Healthy }},
		{"Verdict", "s", true, func(m *ManagerView) any { return m.Verdict }},
		{"FatalPorts", "as", true, func(m *ManagerView) any { return nonNil(m.FatalPorts) }},
		{"DegradedPorts", "as", true, func(m *ManagerView) any { return nonNil(m.DegradedPorts) }},
		{"Conditions", conditionSig, true, func(m *ManagerView) any { return conditionList(m.Conditions) }},
		{"ConfigPath", "s", true, func(m *ManagerView) any { return m.ConfigPath }},
		{"ConfigGeneration", "t", true, func(m *ManagerView) any { return m.ConfigGeneration }},
		{"LastReloadError", "s", true, func(m *ManagerView) any { return m.LastReloadError }},
		{"MonitoredPorts", "u", true, func(m *ManagerView) any { return m.MonitoredPorts }},
		{"MonitoredNICs", "u", true, func(m *ManagerView) any { return m.MonitoredNICs }},
		{"Ready", "b", true, func(m *ManagerView) any { return m.Ready }},
		{"RejectedEvents", "u", true, func(m *ManagerView) any { return m.RejectedEvents }},
	}
}

func portProps() []propDef[PortView] {
	return []propDef[PortView]{
		{"Device", "s", true, func(p *PortView) any { return p.Device }},
		{"Port", "u", true, func(p *PortView) any { return uint32(max(p.Port, 0)) }},
		{"LinkLayer", "s", true, func(p *PortView) any { return p.LinkLayer }},
		{"Role", "s", true, func(p *PortView) any { return p.Role }},
		{"RoleReason", "s", true, func(p *PortView) any { return p.RoleReason }},
		{"NetDev", "s", true, func(p *PortView) any { return p.NetDev }},
		{"PCIAddress", "s", true, func(p *PortView) any { return p.PCIAddress }},
		{"NUMANode", "i", true, func(p *PortView) any { return p.NUMANode }},
		{"NodeGUID", "s", true, func(p *PortView) any { return p.NodeGUID }},
		{"PortGUID", "s", true, func(p *PortView) any { return p.PortGUID }},
		{"GPUs", "s", true, func(p *PortView) any { return p.GPUs }},
		{"Rate", "s", true, func(p *PortView) any { return p.Rate }},
		{"State", "s", true, func(p *PortView) any { return p.State }},
		{"PhysState", "s", true, func(p *PortView) any { return p.PhysState }},
		{"Up", "b", true, func(p *PortView) any { return p.Up }},
		{"RateGbps", "d", true, func(p *PortView) any { return p.RateGbps }},
		{"Healthy", "b", true, func(p *PortView) any { return p.Healthy }},
		{"Fatal", "b", true, func(p *PortView) any { return p.Fatal }},
		{"Verdict", "s", true, func(p *PortView) any { return p.Verdict }},
		{"Conditions", conditionSig, true, func(p *PortView) any { return conditionList(p.Conditions) }},
		{"Message", "s", true, func(p *PortView) any { return p.Message }},
		{"LinkDownReason", "s", true, func(p *PortView) any { return p.LinkDownReason }},
		{"LastChangeUSec", "t", true, func(p *PortView) any { return p.LastChangeUSec }},
		{"Counters", "a{sa{sv}}", false, func(p *PortView) any { return counterList(p.Counters) }},
		{"LatchedBreaches", "as", true, func(p *PortView) any { return p.LatchedBreaches() }},
		{"Sanity", "as", true, func(p *PortView) any { return nonNil(p.Sanity) }},
		{"FirmwareVersion", "s", true, func(p *PortView) any { return p.FirmwareVersion }},
		{"BoardID", "s", true, func(p *PortView) any { return p.BoardID }},
		{"PeerGUID", "s", true, func(p *PortView) any { return p.PeerGUID }},
		{"PeerPort", "u", true, func(p *PortView) any { return p.PeerPort }},
		{"PeerName", "s", true, func(p *PortView) any { return p.PeerName }},
		{"PeerCounters", "a{st}", false, func(p *PortView) any { return nonNilMap(p.PeerCounters) }},
		// The read time moves every [farEnd] interval and the error
		// count every failed one: read, not signalled. The error text
		// is the answering/silent crossing and is signalled.
		{"PeerReadUSec", "t", false, func(p *PortView) any { return p.PeerReadUSec }},
		{"PeerReadErrors", "t", false, func(p *PortView) any { return p.PeerReadErrors }},
		{"PeerReadError", "s", true, func(p *PortView) any { return p.PeerReadError }},
		{"RoCEClass", "s", true, func(p *PortView) any { return p.RoCEClass }},
		{"RoCEEvidence", "s", true, func(p *PortView) any { return p.RoCEEvidence }},
		{"RoCEPauseLostGbps", "d", false, func(p *PortView) any { return p.RoCEPauseLostGbps }},
		{"RoCEPauseLostPercent", "d", false, func(p *PortView) any { return p.RoCEPauseLostPercent }},
		{"CableDirection", "s", true, func(p *PortView) any { return p.CableDirection }},
		{"CableSuspect", "s", true, func(p *PortView) any { return p.CableSuspect }},
		{"CablePart", "s", true, func(p *PortView) any { return p.CablePart }},
		// The evidence's rises move every tick while errors flow: read,
		// not signalled.
		{"CableEvidence", "as", false, func(p *PortView) any { return nonNil(p.CableEvidence) }},
	}
}

// propMeta is the view-independent part of a propDef.
type propMeta struct {
	name  string
	sig   string
	emits bool
}

func metaOf[V any](defs []propDef[V]) []propMeta {
	out := make([]propMeta, len(defs))
	for i, d := range defs {
		out[i] = propMeta{d.name, d.sig, d.emits}
	}
	return out
}

func valuesOf[V any](defs []propDef[V], v *V) []any {
	out := make([]any, len(defs))
	for i, d := range defs {
		out[i] = d.get(v)
	}
	return out
}

// sameValue compares two stored property values of the same property.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case uint32:
		y, ok := b.(uint32)
		return ok && x == y
	case int32:
		y, ok := b.(int32)
		return ok && x == y
	case uint64:
		y, ok := b.(uint64)
		return ok && x == y
	case []string:
		y, ok := b.([]string)
		return ok && slices.Equal(x, y)
	}
	return reflect.DeepEqual(a, b)
}

// methodDef is one exported method. Argument types are not written down:
// they are read from fn by reflection, exactly as godbus decodes calls, so
// the introspection XML cannot drift from what the method accepts.
type methodDef struct {
	name string
	in   []string
	out  []string
	fn   any // func(args...) (outs..., *dbus.Error)
}

type signalDef struct {
	name string
	args []introspect.Arg
}

// ifaceDef is one interface of one object.
type ifaceDef struct {
	name    string
	methods []methodDef
	signals []signalDef
	props   []propMeta
	// builtin interfaces are answered by godbus itself (Peer) and only
	// appear in the XML.
	builtin bool
}

var (
	senderType  = reflect.TypeOf(dbus.Sender(""))
	messageType = reflect.TypeOf(dbus.Message{})
	errorType   = reflect.TypeOf(&dbus.Error{})
)

// methodArgs derives the introspection arguments of m from its function.
func methodArgs(m methodDef) ([]introspect.Arg, error) {
	t := reflect.TypeOf(m.fn)
	if t == nil || t.Kind() != reflect.Func {
		return nil, fmt.Errorf("method %s: not a function", m.name)
	}
	if t.NumOut() == 0 || t.Out(t.NumOut()-1) != errorType {
		return nil, fmt.Errorf("method %s: last result must be *dbus.Error", m.name)
	}
	var args []introspect.Arg
	n := 0
	for i := 0; i < t.NumIn(); i++ {
		in := t.In(i)
		if in == senderType || in == messageType {
			continue
		}
		if n >= len(m.in) {
			return nil, fmt.Errorf("method %s: %d input names for more inputs", m.name, len(m.in))
		}
		args = append(args, introspect.Arg{Name: m.in[n], Type: dbus.SignatureOfType(in).String(), Direction: "in"})
		n++
	}
	if n != len(m.in) {
		return nil, fmt.Errorf("method %s: %d input names for %d inputs", m.name, len(m.in), n)
	}
	if t.NumOut()-1 != len(m.out) {
		return nil, fmt.Errorf("method %s: %d output names for %d outputs", m.name, len(m.out), t.NumOut()-1)
	}
	for i := 0; i < t.NumOut()-1; i++ {
		args = append(args, introspect.Arg{Name: m.out[i], Type: dbus.SignatureOfType(t.Out(i)).String(), Direction: "out"})
	}
	return args, nil
}

func (d ifaceDef) introspect() (introspect.Interface, error) {
	out := introspect.Interface{Name: d.name}
	for _, m := range d.methods {
		args, err := methodArgs(m)
		if err != nil {
			return out, fmt.Errorf("interface %s: %w", d.name, err)
		}
		out.Methods = append(out.Methods, introspect.Method{Name: m.name, Args: args})
	}
	for _, s := range d.signals {
		out.Signals = append(out.Signals, introspect.Signal{Name: s.name, Args: s.args})
	}
	for _, p := range d.props {
		ip := introspect.Property{Name: p.name, Type: p.sig, Access: "read"}
		if !p.emits {
			ip.Annotations = []introspect.Annotation{{Name: emitsChangedAnnotation, Value: "false"}}
		}
		out.Properties = append(out.Properties, ip)
	}
	return out, nil
}

// introspectXML renders one object's interfaces and child nodes.
func introspectXML(ifaces []ifaceDef, children []string) (string, error) {
	n := introspect.Node{}
	for _, d := range ifaces {
		ii, err := d.introspect()
		if err != nil {
			return "", err
		}
		n.Interfaces = append(n.Interfaces, ii)
	}
	for _, c := range children {
		n.Children = append(n.Children, introspect.Node{Name: c})
	}
	b, err := xml.MarshalIndent(n, "", " ")
	if err != nil {
		return "", fmt.Errorf("marshal introspection: %w", err)
	}
	return introspect.IntrospectDeclarationString + string(b) + "\n", nil
}

// methodTable is what godbus's ExportMethodTable wants.
func (d ifaceDef) methodTable() map[string]any {
	m := make(map[string]any, len(d.methods))
	for _, md := range d.methods {
		m[md.name] = md.fn
	}
	return m
}

func arg(name, sig string) introspect.Arg { return introspect.Arg{Name: name, Type: sig} }

func healthEventSignal() signalDef {
	return signalDef{"HealthEvent", []introspect.Arg{
		arg("seq", "t"), arg("checkName", "s"), arg("device", "s"), arg("port", "u"),
		arg("isFatal", "b"), arg("isHealthy", "b"), arg("message", "s"), arg("json", "s"),
	}}
}

func propertiesChangedSignal() signalDef {
	return signalDef{"PropertiesChanged", []introspect.Arg{
		arg("interface_name", "s"), arg("changed_properties", "a{sv}"), arg("invalidated_properties", "as"),
	}}
}

func objectManagerSignals() []signalDef {
	return []signalDef{
		{"InterfacesAdded", []introspect.Arg{arg("object_path", "o"), arg("interfaces_and_properties", "a{sa{sv}}")}},
		{"InterfacesRemoved", []introspect.Arg{arg("object_path", "o"), arg("interfaces", "as")}},
	}
}

func peerIface() ifaceDef {
	return ifaceDef{name: peerIf, builtin: true, methods: []methodDef{
		{name: "Ping", fn: func() *dbus.Error { return nil }},
		{name: "GetMachineId", out: []string{"machine_uuid"}, fn: func() (string, *dbus.Error) { return "", nil }},
	}}
}

// nonNilMap keeps an absent map a valid (empty) D-Bus dictionary.
func nonNilMap(m map[string]uint64) map[string]uint64 {
	if m == nil {
		return map[string]uint64{}
	}
	return m
}
