package daemon

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/checks"
	"github.com/nichealth/nichealthd/checks/event"
	"github.com/nichealth/nichealthd/checks/sanity"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// sanityEvery is how often the link sanity pass re-reads PCIe link state,
// SM LIDs and character devices. These change rarely (a retrain, an SM
// failover, a module unload) and cost file reads, so they stay off the
// per-second path; a port's rate changing triggers a pass at once.
const sanityEvery = time.Minute

// charDevEvery spaces out the /dev/infiniband check, which walks every
// entry of class/infiniband_verbs and infiniband_mad (VFs included: a
// thousand entries on a large SR-IOV node). Character devices appear and go
// with driver loads, which also change the device set and trigger a pass.
const charDevEvery = 10 * time.Minute

// sanityDue reports whether the pass should run this cycle.
func (m *Monitor) sanityDue(now time.Time) bool {
	if !m.cfg.Sanity.Enabled {
		return false
	}
	return m.cycles == 0 || m.devicesSetChanged || m.rateChanged || now.Sub(m.lastSanity) >= sanityEvery
}

// runSanity judges the classic IB health check's extras (PCIe link, SM LID,
// port rate vs peers, /dev/infiniband nodes) and reports each finding once,
// with a healthy event when it clears. Findings use the degradation check's
// name and carry errorCode = [kind], like counter events, so a port's
// healthy state event never clears them.
func (m *Monitor) runSanity(now time.Time, specs *[]event.Spec, changed *bool) {
	m.lastSanity = now
	m.rateChanged = false
	findings := m.sanityFindings(now)
	seen := map[string]bool{}
	var hops []sanity.Finding
	for _, f := range findings {
		if f.PCI != "" {
			hops = append(hops, f)
			continue
		}
		key := fmt.Sprintf("%s|%s|%d", f.Kind, f.Device, f.Port)
		seen[key] = true
		if _, reported := m.mem.Sanity.Reported[key]; reported {
			continue
		}
		m.mem.Sanity.Reported[key] = f.Message
		*changed = true
		*specs = append(*specs, event.Spec{
			Kind: event.KindLinkSanity, CheckName: checks.DegradationCheckFor(m.linkLayerOfDevice(f.Device)),
			IsFatal: m.cfg.Sanity.Fatal, Message: f.Message, ErrorCode: []string{f.Kind},
			Device: f.Device, Port: f.Port, Metadata: f.Metadata,
		})
	}
	for key, msg := range m.mem.Sanity.Reported {
		if seen[key] {
			continue
		}
		delete(m.mem.Sanity.Reported, key)
		*changed = true
		parts := strings.SplitN(key, "|", 3)
		if len(parts) != 3 {
			continue
		}
		port := 0
		fmt.Sscan(parts[2], &port)
		*specs = append(*specs, event.Spec{
			Kind: event.KindLinkSanityOK, CheckName: checks.DegradationCheckFor(m.linkLayerOfDevice(parts[1])),
			IsHealthy: true, ErrorCode: []string{parts[0]}, Device: parts[1], Port: port,
			Message: fmt.Sprintf("Resolved: %s", msg),
		})
	}
	m.reportPCIePath(hops, specs, changed)
}

// sanityFindings runs the checks of package sanity over the monitored
// devices with the poll's live port states and rates. The character-device
// walk runs only when due; in between its last findings stand.
func (m *Monitor) sanityFindings(now time.Time) []sanity.Finding {
	var devs []*topology.Device
	for _, d := range m.devices {
		if !d.Monitored() {
			continue
		}
		devs = append(devs, d)
		for i := range d.Ports {
			p := &d.Ports[i]
			if p.LinkLayer != topology.LinkLayerInfiniBand {
				continue
			}
			if b, err := m.readFile(filepath.Join(p.Dir, "sm_lid")); err == nil {
				p.SMLID = string(sysfs.TrimValue(b))
			}
		}
	}
	live := func(d *topology.Device, port *topology.Port) (float64, bool) {
		p := m.planOf[port]
		if p == nil {
			return 0, false
		}
		port.State = fmt.Sprintf("%d: %s", p.obs.State.ID, p.obs.State.Name)
		return p.rateGbps, p.active()
	}
	s := m.cfg.Sanity
	charDue := s.CharDevices && (m.cycles == 0 || m.devicesSetChanged || now.Sub(m.lastCharDev) >= charDevEvery)
	findings := sanity.Run(m.cfg.Paths, devs, live, sanity.Options{
		PCIe: s.PCIe, RateVsPeers: s.RateVsPeers, SMLID: s.SMLID, ISSM: s.ISSM, CharDevices: charDue, RoCEGID: s.RoCEGID,
		Read: m.readFile,
	})
	if !charDue {
		if s.CharDevices {
			findings = append(findings, m.charDevFindings...)
		}
		return findings
	}
	m.lastCharDev = now
	m.charDevFindings = m.charDevFindings[:0]
	for _, f := range findings {
		if f.Kind == sanity.KindCharDevice {
			m.charDevFindings = append(m.charDevFindings, f)
		}
	}
	return findings
}

func (m *Monitor) linkLayerOfDevice(name string) string {
	for _, d := range m.devices {
		if d.Name == name {
			return d.LinkLayer()
		}
	}
	return topology.LinkLayerInfiniBand
}
