// Command fakemad answers nichealth-mad's protocol as a fabric of
// switches of 40 ports each would, at once: switch LID n has node GUID
// 0xb83fd20300a00000+n-1. It stands in for the helper where a test needs
// a share larger than the lab's simulator holds (10,000 ports); every
// protocol line goes through the project's wire package both ways.
package main

import (
	"bufio"
	"os"

	"github.com/nichealth/nichealthd/mad/wire"
)

func main() {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, wire.MaxLine), wire.MaxLine)
	out := bufio.NewWriter(os.Stdout)
	var n uint64
	for sc.Scan() {
		req, err := wire.DecodeRequest(sc.Bytes())
		a := wire.Answer{ID: req.ID}
		switch {
		case err != nil:
			a.Err = &wire.Error{Kind: wire.ErrRequest, Msg: err.Error()}
		case req.Op == wire.OpHello:
			a.Hello = &wire.Hello{Version: wire.Version, Helper: "fakemad"}
		case req.Op == wire.OpPorts:
			a.Ports = []wire.LocalPort{{CA: "mlx5_0", Port: 1, GUID: "0xa088c20300ab0001", LID: 1000, SMLID: 1, State: 4, PhysState: 5, LinkLayer: "InfiniBand"}}
		case req.Op == wire.OpNodeInfo:
			a.Node = &wire.Node{NodeGUID: wire.FormatGUID(0xb83fd20300a00000 + uint64(req.LID) - 1), NodeType: 2, NumPorts: 40}
		case req.Op == wire.OpClassPortInfo:
			a.CPI = &wire.ClassPortInfo{CapMask: wire.CapExtWidth, CapMask2: wire.Cap2AddlPortCountersX}
		case req.Op == wire.OpPortCountersExt:
			n++
			a.Ext = &wire.PortCountersExt{PortXmitData: n << 20, PortRcvData: n << 19, PortXmitPkts: n << 10, PortRcvPkts: n << 9}
			if req.ExtErrors {
				a.Ext.Errors = &wire.PortCounters{SymbolErrorCounter: n % 7, PortXmitData: n << 20, PortRcvData: n << 19, PortXmitPkts: n << 10, PortRcvPkts: n << 9, PortXmitWait: n}
			}
		default:
			a.Err = &wire.Error{Kind: wire.ErrMAD, Msg: "not in this fabric"}
		}
		line, _ := wire.Encode(a)
		out.Write(line)
		out.Flush()
	}
}
