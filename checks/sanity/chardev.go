package sanity

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/sysfs"
)

// classEntry is one entry of class/infiniband_verbs or class/infiniband_mad.
type classEntry struct {
	name  string // uverbs0, umad3, issm3
	ibdev string
	port  int // 0 for verbs entries
}

// classState is what listing a character-device class found.
type classState int

const (
	classListed  classState = iota
	classMissing            // the class directory does not exist: the module is not loaded
	classUnknown            // the directory exists but cannot be listed: nothing can be concluded
)

// listClass reads every entry of a character-device class. Entries whose
// ibdev cannot be read are skipped (they vanish when a device is
// unbound); abi_version and other plain files are not entries.
func listClass(dir string, withPort bool, read topology.ReadFunc) ([]classEntry, classState) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, classMissing
		}
		return nil, classUnknown
	}
	var out []classEntry
	for _, e := range ents {
		b, err := read(filepath.Join(dir, e.Name(), "ibdev"))
		if err != nil {
			continue
		}
		ce := classEntry{name: e.Name(), ibdev: string(sysfs.TrimValue(b))}
		if withPort {
			pb, err := read(filepath.Join(dir, e.Name(), "port"))
			if err != nil {
				continue
			}
			if ce.port, err = sysfs.ParseInt(pb); err != nil {
				continue
			}
		}
		out = append(out, ce)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, classListed
}

// madKind tells umad from issm entries of class/infiniband_mad ("" for
// anything else).
func madKind(name string) string {
	for _, k := range []string{"umad", "issm"} {
		if len(name) > len(k) && name[:len(k)] == k {
			if _, err := strconv.Atoi(name[len(k):]); err == nil {
				return k
			}
		}
	}
	return ""
}

// CharDevices checks that every monitored device (d.Monitored()) has its
// verbs character device and every port its umad one (and issm when issm
// is true, for InfiniBand ports only: issm exists only in IB mode), both
// in sysfs and as a node under <DevRoot>/infiniband. Without uverbs no
// RDMA application can open the device; without umad the subnet manager
// and the diagnostics (ibstat, perfquery) cannot reach the port, so a NIC
// that looks healthy in sysfs is still useless to the workload.
//
// The classes are read next to class/infiniband (p.ClassInfiniBand's
// parent), so a relocated sysfs is followed. Outcomes per class:
//   - the class directory is missing: the kernel module is not loaded, and
//     every monitored device (or port) gets a finding saying which one;
//   - the directory cannot be listed for another reason: no finding from
//     that class, because nothing can be concluded;
//   - an entry maps to the device but its /dev node is missing: a finding
//     naming the node (udev rules did not run, or /dev/infiniband is not
//     mounted into the container).
//
// A /dev node is checked for existence only; its type is not, so test
// trees can use plain files.
func CharDevices(p topology.Paths, devs []*topology.Device, issm bool) []Finding {
	return charDevicesWith(p, devs, issm, nil)
}

// charDevicesWith is CharDevices reading the class entries' attributes
// with read (os.ReadFile when nil).
func charDevicesWith(p topology.Paths, devs []*topology.Device, issm bool, read topology.ReadFunc) []Finding {
	p = p.WithDefaults()
	if read == nil {
		read = os.ReadFile
	}
	classRoot := filepath.Dir(p.ClassInfiniBand)
	sc := charDevScan{
		devDir:   filepath.Join(p.DevRoot, "infiniband"),
		verbsDir: filepath.Join(classRoot, "infiniband_verbs"),
		madDir:   filepath.Join(classRoot, "infiniband_mad"),
		issm:     issm,
		verbsOf:  map[string][]string{},
		madOf:    map[string]map[madPort]string{"umad": {}, "issm": {}},
	}
	var verbs, mads []classEntry
	verbs, sc.verbsState = listClass(sc.verbsDir, false, read)
	mads, sc.madState = listClass(sc.madDir, true, read)
	for _, e := range verbs {
		sc.verbsOf[e.ibdev] = append(sc.verbsOf[e.ibdev], e.name)
	}
	for _, e := range mads {
		if byPort, ok := sc.madOf[madKind(e.name)]; ok {
			key := madPort{e.ibdev, e.port}
			if _, dup := byPort[key]; !dup {
				byPort[key] = e.name
			}
		}
	}
	for _, d := range devs {
		if d == nil || !d.Monitored() {
			continue
		}
		sc.verbsOfDevice(d)
		if sc.madState != classUnknown {
			sc.madsOfDevice(d)
		}
	}
	return sc.out
}

// madPort names one port in the infiniband_mad class.
type madPort struct {
	dev  string
	port int
}

// charDevScan is one pass over the character device classes.
type charDevScan struct {
	devDir, verbsDir, madDir string
	issm                     bool
	verbsOf                  map[string][]string
	madOf                    map[string]map[madPort]string
	verbsState, madState     classState
	out                      []Finding
}

// nodeMissing reports a class entry whose /dev node is absent.
func (sc *charDevScan) nodeMissing(dev string, port int, class, name string) {
	node := filepath.Join(sc.devDir, name)
	if _, err := os.Stat(node); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return
	}
	what := fmt.Sprintf("NIC %s", dev)
	if port > 0 {
		what = fmt.Sprintf("Port %s port %d", dev, port)
	}
	sc.out = append(sc.out, Finding{
		Device: dev, Port: port, Kind: KindCharDevice,
		Message: fmt.Sprintf("%s: character device %s is missing although %s/%s exists: "+
			"check that the rdma-core udev rules are installed (udevadm trigger --subsystem-match=%s) "+
			"and, in a container, that /dev/infiniband is mounted", what, node, class, name, class),
		Metadata: map[string]string{"class": class, "node": node, "missing": "node"},
	})
}

// verbsOfDevice checks the device's uverbs entries and nodes.
func (sc *charDevScan) verbsOfDevice(d *topology.Device) {
	switch names := sc.verbsOf[d.Name]; {
	case sc.verbsState == classUnknown:
	case len(names) == 0:
		why := "no entry of " + sc.verbsDir + " names it"
		if sc.verbsState == classMissing {
			why = sc.verbsDir + " does not exist"
		}
		sc.out = append(sc.out, Finding{
			Device: d.Name, Kind: KindCharDevice,
			Message: fmt.Sprintf("NIC %s has no verbs character device (uverbs; %s): RDMA applications cannot open it; "+
				"load ib_uverbs (modprobe ib_uverbs) and install rdma-core's udev rules", d.Name, why),
			Metadata: map[string]string{"class": "infiniband_verbs", "missing": "uverbs"},
		})
	default:
		for _, n := range names {
			sc.nodeMissing(d.Name, 0, "infiniband_verbs", n)
		}
	}
}

// madsOfDevice checks each port's umad (and, when asked, issm) entries
// and nodes.
func (sc *charDevScan) madsOfDevice(d *topology.Device) {
	for i := range d.Ports {
		port := &d.Ports[i]
		kinds := []string{"umad"}
		if sc.issm && port.LinkLayer == topology.LinkLayerInfiniBand {
			kinds = append(kinds, "issm")
		}
		for _, k := range kinds {
			if name, ok := sc.madOf[k][madPort{d.Name, port.Num}]; ok {
				sc.nodeMissing(d.Name, port.Num, "infiniband_mad", name)
				continue
			}
			why := "no entry of " + sc.madDir + " names it"
			if sc.madState == classMissing {
				why = sc.madDir + " does not exist"
			}
			impact := "the subnet manager and diagnostics (ibstat, perfquery) cannot reach it"
			if k == "issm" {
				impact = "a subnet manager on this host cannot take the port over"
			}
			sc.out = append(sc.out, Finding{
				Device: d.Name, Port: port.Num, Kind: KindCharDevice,
				Message: fmt.Sprintf("Port %s port %d has no %s character device (%s): %s; "+
					"load ib_umad (modprobe ib_umad) and install rdma-core's udev rules",
					d.Name, port.Num, k, why, impact),
				Metadata: map[string]string{"class": "infiniband_mad", "missing": k},
			})
		}
	}
}
