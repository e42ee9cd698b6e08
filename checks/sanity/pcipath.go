package sanity

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/nichealth/nichealthd/topology"
)

// PCIe path hop roles, as the findings name them.
const (
	RoleRootPort       = "root port"
	RoleDownstreamPort = "switch downstream port"
	RoleUpstreamPort   = "switch upstream port"
)

// hopRole says what hop i (i >= 1) of a path from PCIPath is. A PCIe
// switch is an upstream port above an internal bus of downstream ports,
// so going up from the NIC the bridges alternate: the slot the card sits
// in (a downstream port, or the root port), the switch's upstream port,
// the downstream port above that switch, and so on.
func hopRole(path []topology.PCIHop, i int) string {
	switch {
	case path[i].RootPort:
		return RoleRootPort
	case i%2 == 1:
		return RoleDownstreamPort
	}
	return RoleUpstreamPort
}

// hopPartner is the index of the other end of hop i's link: a root port or
// downstream port reports the link to the function below it, an upstream
// port the link to the port above it. -1 when the path does not say.
func hopPartner(path []topology.PCIHop, i int) int {
	if hopRole(path, i) != RoleUpstreamPort {
		return i - 1
	}
	if i+1 < len(path) {
		return i + 1
	}
	return -1
}

// hopJudgement is one slow link of the path, before the NICs below it are
// all known.
type hopJudgement struct {
	hop      topology.PCIHop
	role     string
	kind     string
	cur      pcieLink
	expSpeed float64
	expText  string
	expWidth int
	below    []string
}

// pciePathWith judges the link of every bridge and switch port on the
// monitored NICs' paths (PCIPath, NIC function excluded: PCIe judges it)
// against what both of its ends support. A hop shared by several NICs is
// read and reported once, naming them all. Unreadable or "Unknown" values
// fail open: no finding.
func pciePathWith(sysfsRoot string, devs []*topology.Device, read topology.ReadFunc) []Finding {
	if read == nil {
		read = os.ReadFile
	}
	links := map[string]*pcieLink{} // by directory; nil: unreadable
	linkOf := func(h topology.PCIHop) *pcieLink {
		if l, ok := links[h.Dir]; ok {
			return l
		}
		l, err := readLink(h.Dir, read)
		if err != nil || !l.present {
			links[h.Dir] = nil
			return nil
		}
		links[h.Dir] = &l
		return &l
	}
	judged := map[string]*hopJudgement{} // by address; nil: link as expected
	var slow []*hopJudgement
	for _, d := range devs {
		path := topology.PCIPath(d, sysfsRoot)
		for i := 1; i < len(path); i++ {
			j, seen := judged[path[i].Address]
			if !seen {
				j = judgeHop(path, i, linkOf)
				judged[path[i].Address] = j
				if j != nil {
					slow = append(slow, j)
				}
			}
			if j != nil {
				j.below = append(j.below, d.Name)
			}
		}
	}
	out := make([]Finding, 0, len(slow))
	for _, j := range slow {
		out = append(out, j.finding())
	}
	return out
}

// judgeHop compares hop i's current link with the lesser of both ends'
// maximum; nil when it is as fast as that or a value is unknown.
func judgeHop(path []topology.PCIHop, i int, linkOf func(topology.PCIHop) *pcieLink) *hopJudgement {
	p := hopPartner(path, i)
	if p < 0 {
		return nil
	}
	self := linkOf(path[i])
	if self == nil || (self.curSpeed >= self.maxSpeed && self.curWidth >= self.maxWidth) {
		// At its own maximum (or unknown): the other end cannot make it
		// slow, and the healthy pass never reads it.
		return nil
	}
	other := linkOf(path[p])
	if other == nil {
		return nil
	}
	j := &hopJudgement{hop: path[i], role: hopRole(path, i), cur: *self}
	if self.maxSpeed > 0 && other.maxSpeed > 0 {
		j.expSpeed, j.expText = self.maxSpeed, self.maxSpeedText
		if other.maxSpeed < self.maxSpeed {
			j.expSpeed, j.expText = other.maxSpeed, other.maxSpeedText
		}
	}
	if self.maxWidth > 0 && other.maxWidth > 0 {
		j.expWidth = min(self.maxWidth, other.maxWidth)
	}
	speedLow := self.curSpeed > 0 && j.expSpeed > 0 && self.curSpeed < j.expSpeed
	widthLow := self.curWidth > 0 && j.expWidth > 0 && self.curWidth < j.expWidth
	switch {
	case widthLow:
		j.kind = KindPCIePathWidth
	case speedLow:
		j.kind = KindPCIePathSpeed
	default:
		return nil
	}
	return j
}

// finding describes the slow hop and names every NIC below it.
func (j *hopJudgement) finding() Finding {
	cur := fmt.Sprintf("%s %s", speedOrUnknown(j.cur.curSpeedText), lanes(j.cur.curWidth))
	exp := fmt.Sprintf("%s %s", speedOrUnknown(j.expText), lanes(j.expWidth))
	nics := strings.Join(j.below, ", ")
	msg := fmt.Sprintf("PCIe %s %s runs its link at %s, both ends support %s (%d%% of the bandwidth): NIC %s below it is limited to that; "+
		"check the riser, cable or retimer of this link and reseat, a reboot retrains it", j.role, j.hop.Address, cur, exp, j.percent(), nics)
	if len(j.below) > 1 {
		msg = strings.Replace(msg, "NIC "+nics+" below it is", "NICs "+nics+" below it are", 1)
	}
	return Finding{
		Device: j.below[0], Kind: j.kind, Message: msg, PCI: j.hop.Address, Below: j.below,
		Metadata: map[string]string{
			"pciHop": j.hop.Address, "hopRole": j.role, "nics": strings.Join(j.below, ","),
			"currentSpeed": j.cur.curSpeedText, "expectedSpeed": j.expText,
			"currentWidth": strconv.Itoa(j.cur.curWidth), "expectedWidth": strconv.Itoa(j.expWidth),
		},
	}
}

// percent is the link's usable bandwidth against what it should have, in
// payload bits: Gen1/2 lanes lose a fifth to 8b/10b coding, Gen3 and later
// 2/130 to 128b/130b. Unknown factors count as full.
func (j *hopJudgement) percent() int {
	r := 1.0
	if j.cur.curSpeed > 0 && j.expSpeed > 0 {
		r *= laneRate(j.cur.curSpeed) / laneRate(j.expSpeed)
	}
	if j.cur.curWidth > 0 && j.expWidth > 0 {
		r *= float64(j.cur.curWidth) / float64(j.expWidth)
	}
	return int(math.Round(100 * r))
}

func laneRate(gts float64) float64 {
	if gts < 8 {
		return gts * 8 / 10
	}
	return gts * 128 / 130
}

// passRead reads each file once per pass (read nil: os.ReadFile): the NIC
// check and the path check share the slot's and the NIC's link files.
func passRead(read topology.ReadFunc) topology.ReadFunc {
	if read == nil {
		read = os.ReadFile
	}
	type result struct {
		b   []byte
		err error
	}
	seen := map[string]result{}
	return func(p string) ([]byte, error) {
		if r, ok := seen[p]; ok {
			return r.b, r.err
		}
		b, err := read(p)
		seen[p] = result{b, err}
		return b, err
	}
}
