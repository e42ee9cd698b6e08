package runner

import (
	"log/slog"
	"slices"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/checks/aer"
	"github.com/nichealth/nichealthd/checks/cable"
	"github.com/nichealth/nichealthd/checks/cards"
	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/checks/farend"
	"github.com/nichealth/nichealthd/checks/firmware"
	"github.com/nichealth/nichealthd/checks/inventory"
	"github.com/nichealth/nichealthd/checks/kernellog"
	"github.com/nichealth/nichealthd/checks/ports"
	"github.com/nichealth/nichealthd/checks/readfaults"
	"github.com/nichealth/nichealthd/checks/roce"
	"github.com/nichealth/nichealthd/checks/rules"
	"github.com/nichealth/nichealthd/checks/sanity"
	"github.com/nichealth/nichealthd/checks/transceiver"
	"github.com/nichealth/nichealthd/config"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/observe"
)

// set is every check of the runner. The views and the daemon's
// acknowledgements reach a few of them by name; the cycle reaches them
// only through list.
type set struct {
	readFaults *readfaults.Check
	ports      *ports.Checks
	cards      *cards.Check
	counters   *counters.Check
	aer        *aer.Check
	kernelLog  *kernellog.Watch
	inventory  *inventory.Check
	sanity     *sanity.Check
	// transceiver and firmware are the link's own story (DESIGN.md
	// section 7): the RoCE ports' modules and the functions' devlink.
	transceiver *transceiver.Check
	firmware    *firmware.Check
	// farEnd is the switch port at the far end of every IB cable
	// (DESIGN.md section 13).
	farEnd *farend.Check
	// roce is the RoCE congestion and loss classes (DESIGN.md section 16).
	roce *roce.Check
	// cable is each port's cable verdict (DESIGN.md section 15), judged
	// from what the checks above observed.
	cable *cable.Tracker
	rules *rules.Check
}

// entry is one check of the list: the value that keeps its memory (a
// checks.Memory, and a renamer or restater when it is one), its steps in
// the order they run, whether they run after the cycle's events are in
// the health model, and how it takes its configuration (returning what a
// reload's configuration says: a latch resolved by a removed counter, a
// rule switched off).
type entry struct {
	unit      any
	steps     []checks.Check
	after     bool
	configure func(*config.Config) []event.Spec
}

// newSet makes every check, in the order the cycle runs them:
//   - read faults first, so a file that hangs or is parked is said before
//     what it feeds is judged;
//   - presence before the port states: a renamed device's memory moves to
//     its new name before its ports are judged under it;
//   - the port states before card homogeneity: a port that falls this
//     cycle is fatal on its own before homogeneity looks at its card,
//     which then does not report it a second time;
//   - then the counters, PCIe AER, the kernel log, the PCI inventory, the
//     link sanity pass, the link's own story (transceivers, devlink), the
//     far end of every IB cable, and the RoCE congestion and loss classes;
//   - the cable verdict, which joins what they read (it raises nothing);
//   - the rules after the cycle's events are in the health model, which
//     they read.
func newSet(log *slog.Logger, boot observe.Boot, bootID string, conds rules.Conditions, rename func(old, nw string)) (*set, []entry) {
	s := &set{
		readFaults:  readfaults.NewCheck(log),
		ports:       ports.New(log, rename),
		counters:    counters.NewCheck(log, boot == observe.BootFresh),
		aer:         aer.NewCheck(),
		inventory:   inventory.NewCheck(log, bootID),
		sanity:      sanity.NewCheck(),
		transceiver: transceiver.NewCheck(),
		firmware:    firmware.NewCheck(),
		farEnd:      farend.NewCheck(),
		roce:        roce.NewCheck(),
		cable:       cable.NewTracker(),
		rules:       rules.NewCheck(boot, bootID, conds),
	}
	s.cards = cards.NewCheck(s.ports)
	s.inventory.UseKnown(func(addr string) inventory.KnownNIC {
		dev, ports, reported := s.ports.Memory().NICAt(addr)
		return inventory.KnownNIC{Device: dev, Ports: ports, Reported: reported}
	})
	s.kernelLog = kernellog.NewWatch(log, bootID, func() []kernellog.Function { return goneFunctions(s.ports.Memory()) })
	return s, []entry{
		{s.readFaults, one(s.readFaults), false, func(c *config.Config) []event.Spec { s.readFaults.Configure(readFaultsConfig(c)); return nil }},
		{s.ports, []checks.Check{s.ports.Presence(), s.ports.State()}, false, func(c *config.Config) []event.Spec { s.ports.Configure(portsConfig(c)); return nil }},
		{s.cards, one(s.cards), false, func(c *config.Config) []event.Spec { s.cards.Configure(cardsConfig(c)); return nil }},
		{s.counters, one(s.counters), false, func(c *config.Config) []event.Spec { return s.counters.Configure(countersConfig(c)) }},
		{s.aer, one(s.aer), false, func(c *config.Config) []event.Spec { s.aer.Configure(aerConfig(c)); return nil }},
		{s.kernelLog, one(s.kernelLog), false, func(c *config.Config) []event.Spec { return s.kernelLog.Configure(kernelLogConfig(c)) }},
		{s.inventory, one(s.inventory), false, func(c *config.Config) []event.Spec { s.inventory.Configure(inventoryConfig(c)); return nil }},
		{s.sanity, one(s.sanity), false, func(c *config.Config) []event.Spec { s.sanity.Configure(sanityConfig(c)); return nil }},
		{s.transceiver, one(s.transceiver), false, func(c *config.Config) []event.Spec {
			s.transceiver.Configure(c.Checks[event.TransceiverCheck])
			return nil
		}},
		{s.firmware, one(s.firmware), false, func(c *config.Config) []event.Spec {
			s.firmware.Configure(c.Checks[event.FirmwareHealthCheck])
			return nil
		}},
		{s.farEnd, one(s.farEnd), false, func(c *config.Config) []event.Spec { return s.farEnd.Configure(farEndConfig(c)) }},
		{s.roce, one(s.roce), false, func(c *config.Config) []event.Spec { return s.roce.Configure(roceConfig(c)) }},
		{s.cable, one(cable.NewCheck(s.cable)), false, func(c *config.Config) []event.Spec { s.cable.Configure(cableConfig(c)); return nil }},
		{s.rules, one(s.rules), true, func(c *config.Config) []event.Spec { return s.rules.Configure(c.Rules, c.Checks) }},
	}
}

func one(c checks.Check) []checks.Check { return []checks.Check{c} }

// serves are the check names e's steps speak for, each once.
func (e entry) serves() []string {
	var out []string
	for _, c := range e.steps {
		for _, name := range c.Serves() {
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// goneFunctions are the NICs missing from the last enumeration with their
// last known ports, as the port checks remember them: kernel log records
// about them are still theirs.
func goneFunctions(mem *ports.PortMemory) []kernellog.Function {
	var out []kernellog.Function
	for _, dev := range mem.KnownDevices {
		f := kernellog.Function{PCI: mem.DeviceAddrs[dev], Device: dev}
		for _, ps := range missingPorts(mem, dev) {
			f.Ports = append(f.Ports, event.PortRef{Device: dev, Port: ps.Port})
		}
		out = append(out, f)
	}
	return out
}
