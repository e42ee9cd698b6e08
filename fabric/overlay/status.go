package overlay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/nichealth/nichealthd/fabric/ibnet"
)

// maxDump bounds one status dump: a node with hundreds of ports and every
// condition active is well below a megabyte.
const maxDump = 16 << 20

// dump is the part of `nichealthctl status --json` the overlay reads.
type dump struct {
	NodeName string `json:"nodeName"`
	Ports    []struct {
		Device    string `json:"device"`
		Port      int    `json:"port"`
		NodeGUID  string `json:"nodeGUID"`
		PortGUID  string `json:"portGUID"`
		State     string `json:"state"`
		PhysState string `json:"physState"`
		Verdict   string `json:"verdict"`
		// CableDirection and CableSuspect are the port's cable verdict
		// (nichealthctl status --json of a daemon that judges it).
		CableDirection string `json:"cableDirection"`
		CableSuspect   string `json:"cableSuspect"`
		Conditions     []struct {
			Fatal   bool   `json:"fatal"`
			Message string `json:"message"`
		} `json:"conditions"`
	} `json:"ports"`
}

// FromStatusDir reads every *.json file of dir as one node's
// `nichealthctl status --json`. A file that cannot be read or is not such
// a dump is skipped and named in the returned problems; only a directory
// that cannot be listed is an error.
func FromStatusDir(dir string) (*Overlay, []error, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, nil, fmt.Errorf("status dumps: %w", err)
	}
	sort.Strings(names)
	o := newOverlay("status dumps in " + dir)
	var probs []error
	for _, name := range names {
		if err := o.addDump(name); err != nil {
			probs = append(probs, err)
		}
	}
	o.sort()
	return o, probs, nil
}

func (o *Overlay) addDump(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", name)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxDump+1))
	if err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	if len(b) > maxDump {
		return fmt.Errorf("%s: larger than %d MiB, not a status dump", name, maxDump>>20)
	}
	var d dump
	if err := json.Unmarshal(b, &d); err != nil {
		return fmt.Errorf("%s: not `nichealthctl status --json` output: %w", name, err)
	}
	if d.Ports == nil {
		return errors.New(name + ": no ports: dump it with a nichealthctl whose status --json lists them")
	}
	node := d.NodeName
	if node == "" {
		node = filepath.Base(name)
	}
	for _, dp := range d.Ports {
		n, _ := ibnet.ParseGUID(dp.NodeGUID)
		pg, _ := ibnet.ParseGUID(dp.PortGUID)
		p := &Port{Node: node, Device: dp.Device, Port: dp.Port, NodeGUID: n, PortGUID: pg, Verdict: ParseVerdict(dp.Verdict)}
		if dp.State != "" {
			p.State = dp.State + "/" + dp.PhysState
		}
		for _, c := range dp.Conditions {
			p.Conditions = append(p.Conditions, c.Message)
		}
		if p.Cable = cableDirection(dp.CableDirection); p.Cable != "" {
			p.Conditions = append(p.Conditions, cableCondition(p.Cable, dp.CableSuspect))
		}
		o.add(p)
	}
	return nil
}
