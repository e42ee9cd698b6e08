package event

import (
	"strconv"

	"github.com/nichealth/nichealthd/event/condition"
)

// KeyOf is the condition an event raises or clears: the key its check
// set (Spec.Condition), or, for an event written before events carried
// one (an outbox record or a test's hand-made event), the key derived
// from its kind, entities and metadata by legacyKey, the one place that
// still reads them. ok is false for an event that names no condition a
// model could hold (a counter event without its counter, a file event
// without its file).
func KeyOf(e *Event) (condition.Key, bool) {
	if e.Condition.Known() {
		return e.Condition, true
	}
	ent, ok := legacyEntity(e)
	return condition.Key{Check: e.CheckName, Entity: ent}, ok
}

// legacyEntity derives the entity of an event that carries no key, as
// the health model did before checks set it. The kinds with a finer
// entity than the port (counters, hung files, sanity findings) keep one
// condition each, so one counter's recovery does not clear another's
// breach; a card event names its card (metadata "card"); otherwise the
// port, the NIC, or the node.
func legacyEntity(e *Event) (condition.Entity, bool) {
	dev := e.Device()
	port, _ := strconv.Atoi(e.Port())
	if card := cardOf(e); card != "" && (e.Kind == KindCardAnomaly || e.Kind == KindCardRecovered) {
		return condition.OfCard(card), true
	}
	switch e.Kind {
	case KindCheckFailed, KindCheckResumed:
		if name := e.Metadata["check"]; name != "" {
			return condition.OfCheck(name), true
		}
		return condition.Entity{}, false
	case KindFunctionFailed, KindFunctionAbsent, KindFunctionOK:
		// One condition per function, whatever is wrong with it: a
		// function that goes from unbound to gone is re-graded, not
		// raised twice.
		if e.Metadata["pci"] == "" {
			return condition.Entity{}, false
		}
		return condition.OfPCI(e.Metadata["pci"], condition.InventoryName), true
	case KindDrift, KindDriftOK:
		if card := cardOf(e); card != "" && e.Metadata["drift"] != "" {
			return condition.OfCardFinding(card, e.Metadata["drift"]), true
		}
		return condition.Entity{}, false
	case KindPortsShort, KindPortsOK:
		return condition.OfNode(condition.ExpectedPortsName), true
	case KindKernelLog, KindKernelLogCleared:
		// One condition per pattern and function, whatever ports the
		// function had when it was raised.
		if e.Metadata["pattern"] == "" {
			return condition.Entity{}, false
		}
		return condition.OfKernelLog(e.Metadata["pci"], e.Metadata["pattern"]), true
	case KindPCIeAER, KindPCIeAERRecovered:
		if e.Metadata["pci"] == "" {
			return condition.Entity{}, false
		}
		return condition.OfPCI(e.Metadata["pci"], e.Metadata["aer"]), true
	case KindNoSubnetManager, KindSubnetManagerFound:
		// One condition per role group, covering the group's ports.
		return condition.OfNode("no-subnet-manager " + e.Metadata["role"]), true
	case KindFarEndLost, KindFarEndRestored:
		return condition.OfNode("farEnd"), true
	case KindCounterSaturated, KindCounterUnsaturated, KindCongestion, KindCongestionCleared, KindRoCE, KindRoCECleared,
		KindPeerBreach, KindPeerRecovered, KindPeerSaturated, KindPeerUnsaturated:
		// Keyed by their own error code ("saturated:link_downed",
		// "congestion"), never by the counter's name: a saturated
		// link_downed must not replace, or be cleared with, its latched
		// fatal breach.
		if len(e.ErrorCode) != 1 || dev == "" {
			return condition.Entity{}, false
		}
		return condition.OfCounter(dev, port, e.ErrorCode[0]), true
	case KindCounterBreach, KindCounterRecovered, KindCounterBaseline:
		if e.Metadata["counters"] != "" && dev != "" {
			// The first tick's baselines of a port, folded into one: a key
			// of their own, never the port's, since under the state check
			// the port's key is its link state's condition, which a
			// baseline must not clear (a port DOWN at boot stays fatal).
			return condition.OfCounter(dev, port, FoldedBaselineName), true
		}
		name := e.Metadata["counter"]
		if name == "" && len(e.ErrorCode) == 1 {
			name = e.ErrorCode[0]
		}
		if name == "" || dev == "" {
			return condition.Entity{}, false
		}
		return condition.OfCounter(dev, port, name), true
	case KindReadStuck, KindReadRecovered, KindReadParked, KindReadResumed:
		f := e.Metadata["file"]
		if f == "" {
			return condition.Entity{}, false
		}
		return condition.OfFile(dev, port, f), true
	case KindLinkSanity, KindLinkSanityOK:
		if hop := e.Metadata["pciHop"]; hop != "" {
			// A slow link on the PCIe path is one finding whatever the
			// NICs below it (their ports are the event's entities).
			name := e.Metadata["finding"]
			if name == "" && len(e.ErrorCode) > 0 {
				name = e.ErrorCode[0] // written before findings named their kind
			}
			if name == "" {
				return condition.Entity{}, false
			}
			return condition.OfPCI(hop, name), true
		}
		if len(e.ErrorCode) != 1 {
			return condition.Entity{}, false
		}
		return condition.OfFinding(dev, port, e.ErrorCode[0]), true
	case KindTransceiver, KindTransceiverOK:
		if len(e.ErrorCode) != 1 || dev == "" {
			return condition.Entity{}, false
		}
		return condition.OfFinding(dev, port, e.ErrorCode[0]), true
	case KindFirmwareHealth, KindFirmwareHealthOK:
		if e.Metadata["pci"] == "" || e.Metadata["finding"] == "" {
			return condition.Entity{}, false
		}
		return condition.OfPCI(e.Metadata["pci"], e.Metadata["finding"]), true
	case KindDeviceDisappeared, KindDeviceReappeared:
		if dev == "" {
			return condition.Entity{}, false
		}
		return condition.OfNIC(dev), true
	}
	switch {
	case dev != "" && port > 0:
		return condition.OfPort(dev, port), true
	case dev != "":
		return condition.OfNIC(dev), true
	}
	return condition.OfNode(""), true
}

// cardOf is a card event's card: its metadata, or an EntityCard entity
// (events written before cards moved to metadata).
func cardOf(e *Event) string {
	if c := e.Metadata["card"]; c != "" {
		return c
	}
	return e.entity(EntityCard)
}

// keyOf is the key New stores: the check's entity with its strings
// cleaned and bounded as every identifier of the event is.
func keyOf(check string, ent condition.Entity) condition.Key {
	if ent.Kind == "" {
		return condition.Key{}
	}
	ent.Device, ent.Card, ent.Name, ent.PCI = name(ent.Device), name(ent.Card), Truncate(Clean(ent.Name), MaxMetadataBytes), name(ent.PCI)
	return condition.Key{Check: name(check), Entity: ent}
}
