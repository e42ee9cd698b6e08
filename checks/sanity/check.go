package sanity

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/observe"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// Section is the link sanity pass's section of the state file.
const Section = "sanity"

// charDevEvery spaces out the /dev/infiniband check, which walks every
// entry of class/infiniband_verbs and infiniband_mad (VFs included: a
// thousand entries on a large SR-IOV node). Character devices appear and go
// with driver loads, which also change the device set and trigger a pass.
const charDevEvery = 10 * time.Minute

// Config is [linkSanity].
type Config struct {
	Enabled, PCIe, RateVsPeers, SMLID, CharDevices, ISSM, RoCEGID bool
	// Fatal makes the findings fatal.
	Fatal bool
}

// Check is the link sanity pass (step "link-sanity", LinkSanityCheck in
// the boundary): the classic IB health check's extras (PCIe link of each
// NIC and along its path, SM LID, port rate vs peers, /dev/infiniband
// nodes, RoCE GIDs), each finding reported once with its clear. Findings
// carry the degradation check's name and errorCode [kind], like counter
// events, so a port's healthy state event never clears them.
type Check struct {
	cfg         Config
	mem         *Memory
	lastCharDev time.Time
	charDev     []Finding
	// smlid is each IB port's sm_lid as the last pass read it, by port
	// directory (discovery's value until a pass reads it).
	smlid map[string]string
}

// NewCheck returns the check with empty memory.
func NewCheck() *Check { return &Check{mem: NewMemory(), smlid: map[string]string{}} }

// Configure applies [linkSanity].
func (c *Check) Configure(cfg Config) { c.cfg = cfg }

// Off says why the pass does not run at all ("" when it does).
func (c *Check) Off() string {
	if c.cfg.Enabled {
		return ""
	}
	return "link sanity is switched off ([linkSanity] enabled = false)"
}

// Memory is what the check remembers.
func (c *Check) Memory() *Memory { return c.mem }

func (*Check) Step() string { return "link-sanity" }

func (*Check) Serves() []string { return []string{event.LinkSanityCheck} }

// Run runs the pass when the observer says it is due.
func (c *Check) Run(cy *checks.Cycle) {
	obs := cy.Obs
	if !obs.SanityDue {
		return
	}
	cy.Enter(event.LinkSanityCheck)
	var hops []Finding
	seen := map[string]bool{}
	for _, f := range c.findings(obs) {
		if f.PCI != "" {
			hops = append(hops, f)
			continue
		}
		key := fmt.Sprintf("%s|%s|%d", f.Kind, f.Device, f.Port)
		seen[key] = true
		if c.mem.Reported.Has(key) {
			continue
		}
		c.mem.Reported.Raise(key, f.Message)
		cy.Changed()
		cy.Emit(event.Spec{
			Kind: event.KindLinkSanity, CheckName: event.DegradationCheckFor(linkLayerOf(obs, f.Device)),
			IsFatal: c.cfg.Fatal, Message: f.Message, ErrorCode: []string{f.Kind},
			Device: f.Device, Port: f.Port, Metadata: f.Metadata,
			Condition: condition.OfFinding(f.Device, f.Port, f.Kind),
		})
	}
	c.mem.Reported.Sweep(func(key string) bool { return seen[key] }, func(key, msg string) {
		cy.Changed()
		parts := strings.SplitN(key, "|", 3)
		if len(parts) != 3 {
			return
		}
		port := 0
		fmt.Sscan(parts[2], &port)
		cy.Emit(event.Spec{
			Kind: event.KindLinkSanityOK, CheckName: event.DegradationCheckFor(linkLayerOf(obs, parts[1])),
			IsHealthy: true, ErrorCode: []string{parts[0]}, Device: parts[1], Port: port,
			Message:   fmt.Sprintf("Resolved: %s", msg),
			Condition: condition.OfFinding(parts[1], port, parts[0]),
		})
	})
	c.reportPCIePath(cy, hops)
}

// findings runs the checks over the monitored devices with the poll's
// live port states and rates. The character-device walk runs only when
// due; in between its last findings stand.
func (c *Check) findings(obs *observe.Observation) []Finding {
	planOf := make(map[*topology.Port]*observe.Port, len(obs.Ports))
	for _, p := range obs.Ports {
		planOf[p.Port] = p
	}
	var devs []*topology.Device
	for _, d := range obs.Devices {
		if !d.Monitored() {
			continue
		}
		devs = append(devs, d)
		for i := range d.Ports {
			p := &d.Ports[i]
			if planOf[p] == nil || p.LinkLayer != topology.LinkLayerInfiniBand {
				continue
			}
			if _, ok := c.smlid[p.Dir]; !ok {
				c.smlid[p.Dir] = p.SMLID
			}
			if b, err := obs.ReadFile(filepath.Join(p.Dir, "sm_lid")); err == nil {
				c.smlid[p.Dir] = string(sysfs.TrimValue(b))
			}
		}
	}
	live := func(d *topology.Device, port *topology.Port) Live {
		p := planOf[port]
		if p == nil {
			return Live{}
		}
		lv := Live{Gbps: p.RateGbps, SMLID: c.smlid[port.Dir]}
		if p.Observed {
			lv.Link = p.Link
		}
		return lv
	}
	charDue := c.cfg.CharDevices && (obs.First || obs.DevicesChanged || obs.Now.Sub(c.lastCharDev) >= charDevEvery)
	findings := Run(obs.Paths, devs, live, Options{
		PCIe: c.cfg.PCIe, RateVsPeers: c.cfg.RateVsPeers, SMLID: c.cfg.SMLID, ISSM: c.cfg.ISSM, CharDevices: charDue, RoCEGID: c.cfg.RoCEGID,
		Read: obs.ReadFile,
	})
	if !charDue {
		if c.cfg.CharDevices {
			findings = append(findings, c.charDev...)
		}
		return findings
	}
	c.lastCharDev = obs.Now
	c.charDev = c.charDev[:0]
	for _, f := range findings {
		if f.Kind == KindCharDevice {
			c.charDev = append(c.charDev, f)
		}
	}
	return findings
}

// reportPCIePath raises each slow hop of the NICs' PCIe paths once, as one
// event per hop whose NIC and NICPort entities are every port below it
// (so each of those ports shows the condition), and clears the hops whose
// link trained back. The hop and the finding kind key the condition
// (condition.OfPCI, and in metadata "pciHop" and errorCode [kind]); the
// clear repeats the raise's check and NICs so every consumer can match
// the two.
func (c *Check) reportPCIePath(cy *checks.Cycle, findings []Finding) {
	obs := cy.Obs
	seen := make(map[string]bool, len(findings))
	for _, f := range findings {
		key := f.Kind + "|" + f.PCI
		seen[key] = true
		if c.mem.Hops.Has(key) {
			continue
		}
		check := event.DegradationCheckFor(linkLayerOf(obs, f.Device))
		c.mem.Hops.Raise(key, HopReport{Check: check, Message: f.Message, NICs: append([]string(nil), f.Below...)})
		cy.Changed()
		md := make(map[string]string, len(f.Metadata)+1)
		for k, v := range f.Metadata {
			md[k] = v
		}
		md["finding"] = f.Kind
		cy.Emit(event.Spec{
			Kind: event.KindLinkSanity, CheckName: check, IsFatal: c.cfg.Fatal, Message: f.Message,
			ErrorCode: []string{f.Kind, hopCode(f.Kind, f.PCI)}, Ports: portsOfNICs(obs, f.Below), Metadata: md,
			Condition: condition.OfPCI(f.PCI, f.Kind),
		})
	}
	c.mem.Hops.Sweep(func(key string) bool { return seen[key] }, func(key string, r HopReport) {
		cy.Changed()
		kind, addr, _ := strings.Cut(key, "|")
		cy.Emit(event.Spec{
			Kind: event.KindLinkSanityOK, CheckName: r.Check, IsHealthy: true, ErrorCode: []string{hopCode(kind, addr)},
			Ports: portsOfNICs(obs, r.NICs), Message: "Resolved: " + r.Message,
			Metadata:  map[string]string{"pciHop": addr, "nics": strings.Join(r.NICs, ","), "finding": kind},
			Condition: condition.OfPCI(addr, kind),
		})
	})
}

// hopCode is the error code of one hop's finding, which its raise carries
// besides the kind and its clear alone: two slow hops of one kind above the
// same NICs name the same ports, and a clear by entity and error code
// (NVSentinel, DESIGN.md difference 13) must remove only its own.
func hopCode(kind, pci string) string { return kind + "@" + pci }

// portsOfNICs lists the monitored ports of the named NICs, in their order.
func portsOfNICs(obs *observe.Observation, nics []string) []event.PortRef {
	var out []event.PortRef
	for _, n := range nics {
		for _, p := range obs.Ports {
			if p.Device.Name == n {
				out = append(out, p.Key())
			}
		}
	}
	return out
}

func linkLayerOf(obs *observe.Observation, name string) string {
	for _, d := range obs.Devices {
		if d.Name == name {
			return d.LinkLayer()
		}
	}
	return topology.LinkLayerInfiniBand
}

// Rename moves what the check remembers of a device to its new name.
func (c *Check) Rename(old, nw string) { c.mem.Rename(old, nw) }

// Section is the check's section of the state file.
func (c *Check) Section() string { return Section }

// Restore starts the memory from the state file's section.
func (c *Check) Restore(raw []byte) []string {
	return checks.RestoreSection(Section, raw, MemoryVersion, c.mem, func() { *c.mem = *NewMemory() }, c.mem.Validate)
}

// Marshal is the section to save.
func (c *Check) Marshal() ([]byte, error) { return json.Marshal(c.mem) }

// Replay does nothing: the pass re-reads what it judges every minute.
func (c *Check) Replay(*event.Event) {}
