package overlay

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/nichealth/nichealthd/fabric/ibnet"
	"github.com/nichealth/nichealthd/internal/jsonerr"
	"github.com/nichealth/nichealthd/internal/regularfile"
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
// a dump is skipped and named in the returned problems. A dir that is not
// a directory, and a directory from which no dump was read, are errors
// (with the problems still returned): a page drawn from no status would
// show a fabric without health, which reads as "nothing reported" when
// the operator only named the wrong place.
func FromStatusDir(dir string) (*Overlay, []error, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("status dumps: %w", err)
	}
	if !fi.IsDir() {
		return nil, nil, fmt.Errorf("status dumps: %s is not a directory: --status names the directory holding each node's `nichealthctl status --json` as NODE.json", dir)
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(names)
	o := newOverlay("status dumps in " + dir)
	var probs []error
	read := 0
	for _, name := range names {
		if err := o.addDump(name); err != nil {
			probs = append(probs, err)
			continue
		}
		read++
	}
	if read == 0 {
		if len(names) == 0 {
			return nil, probs, fmt.Errorf("read no status: %s holds no *.json dump (collect each node's `nichealthctl status --json > NODE.json` there)", dir)
		}
		return nil, probs, fmt.Errorf("read no status: none of the %d *.json files in %s is a `nichealthctl status --json` dump", len(names), dir)
	}
	o.sort()
	return o, probs, nil
}

func (o *Overlay) addDump(name string) error {
	// The bounded reader: a FIFO among the dumps (or a dump that grows
	// without end) is refused with its reason instead of blocking the
	// open or the read.
	b, err := regularfile.Read(name, maxDump)
	if err != nil {
		return fmt.Errorf("%w (a status dump is a regular file of at most %d MiB)", err, maxDump>>20)
	}
	var d dump
	if err := json.Unmarshal(b, &d); err != nil {
		return fmt.Errorf("%s: not `nichealthctl status --json` output: %s", name, jsonerr.Describe(b, err))
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
