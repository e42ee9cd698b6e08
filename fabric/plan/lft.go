package plan

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/nichealth/nichealthd/fabric/ibnet"
)

// maxLine bounds one line of dump_lfts output (a destination line with a
// 64-byte node description is under 150 bytes).
const maxLine = 4096

// maxProblems bounds the skipped lines kept (the rest are counted).
const maxProblems = 1000

// NoRoute is the out port of a LID a table does not forward.
const NoRoute = 255

// LFT is one switch's linear forwarding table.
type LFT struct {
	GUID ibnet.GUID
	Name string
	// LID is the switch's own LID (the entry it forwards to port 0), 0
	// when the dump does not say.
	LID int
	// Out[lid] is the port the switch forwards lid out of (0 for itself,
	// NoRoute where it has no entry).
	Out []uint8
}

// Port returns the out port for a LID, NoRoute when there is none.
func (t *LFT) Port(lid int) int {
	if lid <= 0 || lid >= len(t.Out) {
		return NoRoute
	}
	return int(t.Out[lid])
}

// Tables are the forwarding tables of a fabric's switches.
type Tables struct {
	Switches     []LFT
	Problems     []ibnet.Problem
	MoreProblems int
	// Foreign counts the tables skipped because their switch is not in
	// the graph they were read for.
	Foreign int
	byGUID  map[ibnet.GUID]int
	// graph and topLID bound what is kept: tables of the graph's switches
	// only, entries up to the highest LID the graph holds (nil: the LID
	// space).
	graph  *ibnet.Graph
	topLID int
}

// Switch returns the table of a switch by node GUID, or nil.
func (t *Tables) Switch(guid ibnet.GUID) *LFT {
	if i, ok := t.byGUID[guid]; ok {
		return &t.Switches[i]
	}
	return nil
}

// maxLID is the top of the unicast LID space (0xbfff; multicast above).
const maxLID = 0xbfff

// ParseLFTs reads the unicast forwarding tables as dump_lfts (dump_fts),
// ibroute and the older dump_lfts.sh print them, with or without the
// destination names (-n), and skips their multicast tables (-M) and
// notices. A line it cannot read is skipped and listed in Problems; the
// error is the reader's.
//
// What it keeps is bounded by g, the fabric the tables are read for (the
// ibnetdiscover graph): only the tables of g's switches (the others are
// counted in Foreign and named in Problems), each only up to the highest
// LID g holds (a LID no node of g owns leads nowhere the plan walks). So
// a crafted dump of 20,000 tables for absent switches, each with one
// LID near 0xBFFF, costs what its lines do, not 20,000 tables of 48 KiB.
// A nil g bounds tables by the LID space only (the parser's own tests).
//
//	Unicast lids [0x0-0x67] of switch DR path slid 0; dlid 0; 0,13 guid 0xec0d9a0300f548c0 (SwitchIB Mellanox Technologies):
//	  Lid  Out   Destination
//	       Port     Info
//	0x0001 015 : (Channel Adapter portguid 0x506b4b030043fa27: 'gpu011 HCA-1')
//	102 valid lids dumped
func ParseLFTs(r io.Reader, g *ibnet.Graph) (*Tables, error) {
	t := &Tables{byGUID: map[ibnet.GUID]int{}, graph: g, topLID: maxLID}
	if g != nil {
		t.topLID = topLID(g)
	}
	br := bufio.NewReaderSize(r, 64<<10)
	line, cur, multicast := 0, -1, false
	problem := func(format string, args ...any) {
		if len(t.Problems) >= maxProblems {
			t.MoreProblems++
			return
		}
		t.Problems = append(t.Problems, ibnet.Problem{Line: line, Reason: fmt.Sprintf(format, args...)})
	}
	for {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			line++
			problem("longer than %d bytes", maxLine)
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice('\n')
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return t, err
			}
			continue
		}
		if len(b) > 0 {
			line++
			s := strings.TrimSpace(string(b))
			switch {
			case len(b) > maxLine:
				problem("longer than %d bytes", maxLine)
			case s == "", strings.HasPrefix(s, "***"), strings.HasPrefix(s, "#"):
			case strings.HasPrefix(s, "Unicast lids "):
				multicast = false
				cur = t.header(s, problem)
			case strings.HasPrefix(s, "Multicast mlids "):
				multicast, cur = true, -1
			case multicast:
				// A multicast table's lines, up to the next unicast one.
			case strings.HasPrefix(s, "Lid ") && strings.Contains(s, "Destination"), strings.HasPrefix(s, "Port ") && strings.HasSuffix(s, "Info"):
			case strings.HasSuffix(s, "lids dumped"):
				cur = -1
			case strings.HasPrefix(s, "0x"):
				t.entry(cur, s, problem)
			default:
				problem("not a forwarding table line: %.60q", s)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return t, err
		}
	}
	return t, nil
}

// skipping is the current table's index while a skipped table's lines
// are read.
const skipping = -2

// topLID is the highest LID a node of g owns: a switch's port 0 LID, an
// HCA or router port's LID and the 2^LMC-1 after it.
func topLID(g *ibnet.Graph) int {
	top := 0
	for i := range g.Nodes {
		top = max(top, g.Nodes[i].LID)
	}
	for i := range g.Ports {
		p := &g.Ports[i]
		top = max(top, int(p.LID)+1<<min(p.LMC, 7)-1)
	}
	return min(top, maxLID)
}

// header reads a table's first line and starts its table: its GUID
// after " guid ", its name in the parentheses that end the line, its LID
// after "switch Lid " when the dump addressed it by LID.
func (t *Tables) header(s string, problem func(string, ...any)) int {
	_, rest, ok := strings.Cut(s, " guid ")
	if !ok {
		problem("table header without a switch GUID")
		return -1
	}
	gs, rest, _ := strings.Cut(rest, " ")
	guid, err := ibnet.ParseGUID(gs)
	if err != nil {
		problem("table header: %v", err)
		return -1
	}
	name := ""
	if i := strings.IndexByte(rest, '('); i >= 0 && strings.HasSuffix(rest, "):") {
		name = rest[i+1 : len(rest)-2]
	}
	lft := LFT{GUID: guid, Name: name}
	if _, after, ok := strings.Cut(s, " of switch Lid "); ok {
		f, _, _ := strings.Cut(after, " ")
		if lid, err := strconv.Atoi(f); err == nil && lid > 0 && lid <= maxLID {
			lft.LID = lid
		}
	}
	if t.graph != nil {
		if n := t.graph.Node(guid); n == nil || n.Kind != ibnet.Switch {
			t.Foreign++
			problem("switch %s (%.60s) is not a switch of the ibnetdiscover output: its table is skipped", guid, name)
			return skipping
		}
	}
	if i, dup := t.byGUID[guid]; dup {
		problem("switch %s has a second table; the later one is kept", guid)
		t.Switches[i] = lft
		return i
	}
	t.byGUID[guid] = len(t.Switches)
	t.Switches = append(t.Switches, lft)
	return len(t.Switches) - 1
}

// entry reads `0x0001 015 : (…)` (or `0x0001 015` of -n) into the
// current table.
func (t *Tables) entry(cur int, s string, problem func(string, ...any)) {
	if cur == skipping {
		return
	}
	if cur < 0 {
		problem("a forwarding entry outside a table")
		return
	}
	f := strings.Fields(s)
	if len(f) < 2 {
		problem("forwarding entry: want a LID and a port")
		return
	}
	lid, err1 := strconv.ParseUint(strings.TrimPrefix(f[0], "0x"), 16, 32)
	port, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || lid == 0 || lid > maxLID || port < 0 || port > 255 {
		problem("forwarding entry: bad LID or port")
		return
	}
	lft := &t.Switches[cur]
	if port == 0 && lft.LID == 0 {
		lft.LID = int(lid)
	}
	if int(lid) > t.topLID {
		return // no node of the fabric has this LID
	}
	if int(lid) >= len(lft.Out) {
		grown := make([]uint8, min(max(int(lid)+1, 2*len(lft.Out)), t.topLID+1))
		copy(grown, lft.Out)
		for i := len(lft.Out); i < len(grown); i++ {
			grown[i] = NoRoute
		}
		lft.Out = grown
	}
	lft.Out[lid] = uint8(port)
}
