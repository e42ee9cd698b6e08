//go:build cgo

package main

/*
#cgo LDFLAGS: -libmad -libumad
#include <errno.h>
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/umad.h>
#include <infiniband/mad.h>

// The classes a port is opened for: SMPs (LID-routed and directed) and the
// PMA's GMPs. Nothing else is registered.
static int nh_classes[3] = { IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_PERFORMANCE_CLASS };

static struct ibmad_port *nh_open(char *ca, int port, int tries) {
	struct ibmad_port *p = mad_rpc_open_port(ca, port, nh_classes, 3);
	if (p)
		mad_rpc_set_retries(p, tries);
	return p;
}

// nh_dr_query sends one directed-route SMP Get out of the local port
// outport (path 0,outport: the neighbour) and copies its 64 data bytes
// into buf. Returns 0, or the errno libibmad left (ETIMEDOUT: no answer;
// EIO: an error status).
static int nh_dr_query(struct ibmad_port *p, int outport, unsigned attr, unsigned mod, unsigned timeout, uint8_t *buf) {
	ib_portid_t id;
	char path[16];
	memset(&id, 0, sizeof id);
	snprintf(path, sizeof path, "0,%d", outport);
	if (str2drpath(&id.drpath, path, 0, 0) < 0)
		return EINVAL;
	errno = 0;
	if (!smp_query_via(buf, &id, attr, mod, timeout, p))
		return errno ? errno : EIO;
	return 0;
}

// nh_lid_smp_query sends one LID-routed SMP Get to lid and copies its 64
// data bytes into buf; same returns as nh_dr_query.
static int nh_lid_smp_query(struct ibmad_port *p, int lid, unsigned attr, unsigned mod, unsigned timeout, uint8_t *buf) {
	ib_portid_t id;
	memset(&id, 0, sizeof id);
	ib_portid_set(&id, lid, 0, 0);
	errno = 0;
	if (!smp_query_via(buf, &id, attr, mod, timeout, p))
		return errno ? errno : EIO;
	return 0;
}

// nh_pma_query sends one PerformanceManagement Get to the PMA at lid for
// attr (ClassPortInfo, PortCounters, PortCountersExtended) of port.
static int nh_pma_query(struct ibmad_port *p, int lid, int port, unsigned attr, unsigned timeout, uint8_t *buf) {
	ib_portid_t id;
	memset(&id, 0, sizeof id);
	ib_portid_set(&id, lid, 1, IB_DEFAULT_QP1_QKEY);
	errno = 0;
	if (!pma_query_via(buf, &id, port, timeout, attr, p))
		return errno ? errno : EIO;
	return 0;
}

static uint32_t nh_field(uint8_t *buf, int f) { return mad_get_field(buf, 0, (enum MAD_FIELDS)f); }
static uint64_t nh_field64(uint8_t *buf, int f) { return mad_get_field64(buf, 0, (enum MAD_FIELDS)f); }
static uint64_t nh_decode64(uint8_t *buf, int f) { uint64_t v = 0; mad_decode_field(buf, (enum MAD_FIELDS)f, &v); return v; }
static uint32_t nh_decode32(uint8_t *buf, int f) { uint32_t v = 0; mad_decode_field(buf, (enum MAD_FIELDS)f, &v); return v; }
static uint64_t nh_be64(__be64 v) { return be64toh(v); }
static umad_port_t *nh_ca_port(umad_ca_t *ca, int i) { return ca->ports[i]; }
*/
import "C"

import (
	"errors"
	"fmt"
	"syscall"
	"time"
	"unsafe"

	"github.com/nichealth/nichealthd/mad/wire"
)

// exit ends the program through the C library's exit, which runs the
// handlers the libraries registered with atexit (os.Exit skips them): a
// library that says goodbye to its peer at exit must be let to.
func exit(code int) { C.exit(C.int(code)) }

// madBuf holds any MAD's data: libibmad copies at most the MAD's 256 bytes.
const madBuf = 1024

// maxOpen bounds the local ports kept open (a host has a few).
const maxOpen = 64

type key struct {
	ca   string
	port int
}

type umadFabric struct {
	open map[key]*C.struct_ibmad_port
	buf  *C.uint8_t
}

func newFabric() (fabric, error) {
	if C.umad_init() < 0 {
		return nil, errors.New("libibumad failed to initialise (umad_init)")
	}
	// libibmad's own messages would only repeat what the answer says.
	C.madrpc_show_errors(0)
	return &umadFabric{open: map[key]*C.struct_ibmad_port{}, buf: (*C.uint8_t)(C.calloc(madBuf, 1))}, nil
}

func (f *umadFabric) Close() {
	for k, p := range f.open {
		C.mad_rpc_close_port(p)
		delete(f.open, k)
	}
	C.free(unsafe.Pointer(f.buf))
}

// Ports lists every port of every CA libibumad sees.
func (f *umadFabric) Ports() ([]wire.LocalPort, error) {
	var names [C.UMAD_MAX_DEVICES][C.UMAD_CA_NAME_LEN]C.char
	n := C.umad_get_cas_names(&names[0], C.UMAD_MAX_DEVICES)
	if n < 0 {
		return nil, &wire.Error{Kind: wire.ErrNoPort, Msg: "libibumad lists no CAs (umad_get_cas_names failed: is ib_umad loaded?)"}
	}
	var out []wire.LocalPort
	for i := 0; i < int(n); i++ {
		var ca C.umad_ca_t
		if C.umad_get_ca(&names[i][0], &ca) < 0 {
			continue
		}
		name := C.GoString(&ca.ca_name[0])
		for j := 0; j < C.UMAD_CA_MAX_PORTS; j++ {
			p := C.nh_ca_port(&ca, C.int(j))
			if p == nil {
				continue
			}
			out = append(out, wire.LocalPort{
				CA: name, Port: int(p.portnum), GUID: wire.FormatGUID(uint64(C.nh_be64(p.port_guid))),
				LID: int(p.base_lid), SMLID: int(p.sm_lid), State: int(p.state), PhysState: int(p.phys_state),
				LinkLayer: C.GoString(&p.link_layer[0]),
			})
		}
		C.umad_release_ca(&ca)
	}
	return out, nil
}

// resolve finds the CA and port of l.
func (f *umadFabric) resolve(l wire.Local) (key, error) {
	if l.GUID == "" {
		return key{l.CA, l.Port}, nil
	}
	ports, err := f.Ports()
	if err != nil {
		return key{}, err
	}
	for _, p := range ports {
		if p.GUID == l.GUID {
			return key{p.CA, p.Port}, nil
		}
	}
	return key{}, &wire.Error{Kind: wire.ErrNoPort, Msg: fmt.Sprintf("no local port has GUID %s", l.GUID)}
}

// port opens (once) the local port of l.
func (f *umadFabric) port(l wire.Local) (*C.struct_ibmad_port, key, error) {
	k, err := f.resolve(l)
	if err != nil {
		return nil, k, err
	}
	if p, ok := f.open[k]; ok {
		return p, k, nil
	}
	cname := C.CString(k.ca)
	defer C.free(unsafe.Pointer(cname))
	p, errno := C.nh_open(cname, C.int(k.port), madTries)
	if p == nil {
		return nil, k, &wire.Error{Kind: wire.ErrOpen, Msg: fmt.Sprintf("open %s port %d: %v (read and write access to /dev/infiniband/umad*, module ib_umad)", k.ca, k.port, errno)}
	}
	if len(f.open) >= maxOpen {
		f.Close()
		f.buf = (*C.uint8_t)(C.calloc(madBuf, 1))
	}
	f.open[k] = p
	return p, k, nil
}

// drop closes a local port after a failure that may mean it is gone.
func (f *umadFabric) drop(k key) {
	if p, ok := f.open[k]; ok {
		C.mad_rpc_close_port(p)
		delete(f.open, k)
	}
}

// madTries is how many times libibmad sends a MAD that gets no answer
// (mad_rpc_set_retries: its "retries" count every send, the first
// included).
const madTries = 2

// attempt is one MAD's timeout: what is left of the budget shared by the
// madsLeft MADs still to send, each of which libibmad may send madTries
// times. So madTries × madsLeft × attempt never exceeds what is left, and
// the helper answers by its deadline even when nothing answers. Less than
// a millisecond a try (libibmad's unit) is the budget run out.
func attempt(deadline time.Time, madsLeft int) (C.uint, error) {
	left := time.Until(deadline)
	ms := left.Milliseconds() / int64(madTries*madsLeft)
	if ms < 1 {
		return 0, &wire.Error{Kind: wire.ErrTimeout, Msg: "the request's budget ran out"}
	}
	return C.uint(ms), nil
}

// madError classifies a failed MAD. libibmad reports a MAD nobody
// answered as ETIMEDOUT when the kernel says so, but a receive that timed
// out ends its retries at once and the warning it prints can leave another
// errno behind: a call that lasted an attempt's whole timeout got no
// answer, whatever errno says.
func madError(what string, rc C.int, timeout C.uint, took time.Duration) error {
	errno := syscall.Errno(rc)
	if errno == syscall.ETIMEDOUT || took >= time.Duration(timeout)*time.Millisecond*9/10 {
		return &wire.Error{Kind: wire.ErrTimeout, Msg: fmt.Sprintf("%s: no answer within %d ms", what, timeout)}
	}
	return &wire.Error{Kind: wire.ErrMAD, Msg: fmt.Sprintf("%s: %v", what, errno)}
}

func (f *umadFabric) dr(p *C.struct_ibmad_port, outport int, attr, mod C.uint, what string, deadline time.Time, left int) error {
	t, err := attempt(deadline, left)
	if err != nil {
		return err
	}
	C.memset(unsafe.Pointer(f.buf), 0, madBuf)
	start := time.Now()
	if rc := C.nh_dr_query(p, C.int(outport), attr, mod, t, f.buf); rc != 0 {
		return madError(what, rc, t, time.Since(start))
	}
	return nil
}

func (f *umadFabric) pma(p *C.struct_ibmad_port, lid, port int, attr C.uint, what string, deadline time.Time) error {
	t, err := attempt(deadline, 1)
	if err != nil {
		return err
	}
	C.memset(unsafe.Pointer(f.buf), 0, madBuf)
	start := time.Now()
	if rc := C.nh_pma_query(p, C.int(lid), C.int(port), attr, t, f.buf); rc != 0 {
		return madError(what, rc, t, time.Since(start))
	}
	return nil
}

func (f *umadFabric) u32(field C.int) uint32 { return uint32(C.nh_field(f.buf, field)) }

// nodeInfo sends the NodeInfo SMP to the neighbour of the local port and
// fills the identity part of a peer.
func (f *umadFabric) nodeInfo(l wire.Local, deadline time.Time, madsLeft int) (wire.Peer, *C.struct_ibmad_port, key, string, error) {
	p, k, err := f.port(l)
	if err != nil {
		return wire.Peer{}, nil, k, "", err
	}
	path := fmt.Sprintf("directed route 0,%d from %s port %d", k.port, k.ca, k.port)
	if err := f.dr(p, k.port, C.IB_ATTR_NODE_INFO, 0, "NodeInfo by "+path, deadline, madsLeft); err != nil {
		f.dropOnOpenFailure(k, err)
		return wire.Peer{}, nil, k, "", err
	}
	var peer wire.Peer
	peer.NodeGUID = wire.FormatGUID(uint64(C.nh_field64(f.buf, C.IB_NODE_GUID_F)))
	peer.PortGUID = wire.FormatGUID(uint64(C.nh_field64(f.buf, C.IB_NODE_PORT_GUID_F)))
	peer.NodeType = int(f.u32(C.IB_NODE_TYPE_F))
	peer.NumPorts = int(f.u32(C.IB_NODE_NPORTS_F))
	peer.Port = int(f.u32(C.IB_NODE_LOCAL_PORT_F))
	return peer, p, k, path, nil
}

// NodeInfo asks the node at lid who it is, by a LID-routed SMP: whether
// a LID from a fabric dump still belongs to the node it named.
func (f *umadFabric) NodeInfo(l wire.Local, lid int, deadline time.Time) (wire.Node, error) {
	p, k, err := f.port(l)
	if err != nil {
		return wire.Node{}, err
	}
	t, err := attempt(deadline, 1)
	if err != nil {
		return wire.Node{}, err
	}
	C.memset(unsafe.Pointer(f.buf), 0, madBuf)
	start := time.Now()
	if rc := C.nh_lid_smp_query(p, C.int(lid), C.IB_ATTR_NODE_INFO, 0, t, f.buf); rc != 0 {
		err := madError(fmt.Sprintf("NodeInfo of LID %d", lid), rc, t, time.Since(start))
		f.dropOnOpenFailure(k, err)
		return wire.Node{}, err
	}
	return wire.Node{
		NodeGUID: wire.FormatGUID(uint64(C.nh_field64(f.buf, C.IB_NODE_GUID_F))),
		NodeType: int(f.u32(C.IB_NODE_TYPE_F)),
		NumPorts: int(f.u32(C.IB_NODE_NPORTS_F)),
	}, nil
}

// PeerNode asks only NodeInfo: whether the known peer is still there.
func (f *umadFabric) PeerNode(l wire.Local, deadline time.Time) (wire.Peer, error) {
	peer, _, _, _, err := f.nodeInfo(l, deadline, 1)
	return peer, err
}

// Peer asks the neighbour of the local port who it is: NodeInfo (GUIDs,
// type, the port the SMP entered by), NodeDescription, PortInfo of that
// port and, on a switch, PortInfo of port 0, which holds its LID.
func (f *umadFabric) Peer(l wire.Local, deadline time.Time) (wire.Peer, error) {
	peer, p, k, path, err := f.nodeInfo(l, deadline, 4)
	if err != nil {
		return wire.Peer{}, err
	}
	if err := f.dr(p, k.port, C.IB_ATTR_NODE_DESC, 0, "NodeDescription by "+path, deadline, 3); err != nil {
		return wire.Peer{}, err
	}
	peer.Description = describe(C.GoBytes(unsafe.Pointer(f.buf), C.IB_SMP_DATA_SIZE))
	if err := f.dr(p, k.port, C.IB_ATTR_PORT_INFO, C.uint(peer.Port), fmt.Sprintf("PortInfo of port %d by %s", peer.Port, path), deadline, 2); err != nil {
		return wire.Peer{}, err
	}
	peer.State = int(f.u32(C.IB_PORT_STATE_F))
	peer.PhysState = int(f.u32(C.IB_PORT_PHYS_STATE_F))
	peer.LID = int(f.u32(C.IB_PORT_LID_F))
	if peer.NodeType == 2 {
		// A switch's external ports have no LID: its management port 0 does.
		if err := f.dr(p, k.port, C.IB_ATTR_PORT_INFO, 0, "PortInfo of port 0 by "+path, deadline, 1); err != nil {
			return wire.Peer{}, err
		}
		peer.LID = int(f.u32(C.IB_PORT_LID_F))
	}
	return peer, nil
}

// dropOnOpenFailure forgets a port whose first MAD failed other than by a
// timeout: its device may have gone (a driver reload), and the next
// request opens it afresh.
func (f *umadFabric) dropOnOpenFailure(k key, err error) {
	var we *wire.Error
	if errors.As(err, &we) && we.Kind != wire.ErrTimeout {
		f.drop(k)
	}
}

func (f *umadFabric) ClassPortInfo(l wire.Local, lid int, deadline time.Time) (wire.ClassPortInfo, error) {
	p, k, err := f.port(l)
	if err != nil {
		return wire.ClassPortInfo{}, err
	}
	if err := f.pma(p, lid, 0, C.CLASS_PORT_INFO, fmt.Sprintf("PMA ClassPortInfo of LID %d", lid), deadline); err != nil {
		f.dropOnOpenFailure(k, err)
		return wire.ClassPortInfo{}, err
	}
	return wire.ClassPortInfo{CapMask: f.u32(C.IB_CPI_CAPMASK_F), CapMask2: f.u32(C.IB_CPI_CAPMASK2_F)}, nil
}

// basic are PortCounters' fields as libibmad names them, in wire.Fields' order.
var basic = [...]C.int{
	C.IB_PC_ERR_SYM_F, C.IB_PC_LINK_RECOVERS_F, C.IB_PC_LINK_DOWNED_F,
	C.IB_PC_ERR_RCV_F, C.IB_PC_ERR_PHYSRCV_F, C.IB_PC_ERR_SWITCH_REL_F,
	C.IB_PC_XMT_DISCARDS_F, C.IB_PC_ERR_XMTCONSTR_F, C.IB_PC_ERR_RCVCONSTR_F,
	C.IB_PC_ERR_LOCALINTEG_F, C.IB_PC_ERR_EXCESS_OVR_F, C.IB_PC_VL15_DROPPED_F,
	C.IB_PC_XMT_BYTES_F, C.IB_PC_RCV_BYTES_F, C.IB_PC_XMT_PKTS_F, C.IB_PC_RCV_PKTS_F,
	C.IB_PC_XMT_WAIT_F,
}

// extErrors are PortCountersExtended's error fields (64-bit), in the same
// order; the four data fields are read separately.
var extErrors = [...]C.int{
	C.IB_PC_EXT_ERR_SYM_F, C.IB_PC_EXT_LINK_RECOVERS_F, C.IB_PC_EXT_LINK_DOWNED_F,
	C.IB_PC_EXT_ERR_RCV_F, C.IB_PC_EXT_ERR_PHYSRCV_F, C.IB_PC_EXT_ERR_SWITCH_REL_F,
	C.IB_PC_EXT_XMT_DISCARDS_F, C.IB_PC_EXT_ERR_XMTCONSTR_F, C.IB_PC_EXT_ERR_RCVCONSTR_F,
	C.IB_PC_EXT_ERR_LOCALINTEG_F, C.IB_PC_EXT_ERR_EXCESS_OVR_F, C.IB_PC_EXT_VL15_DROPPED_F,
	C.IB_PC_EXT_XMT_BYTES_F, C.IB_PC_EXT_RCV_BYTES_F, C.IB_PC_EXT_XMT_PKTS_F, C.IB_PC_EXT_RCV_PKTS_F,
	C.IB_PC_EXT_XMT_WAIT_F,
}

// Both tables name every wire field, no more and no fewer: the build fails
// (a constant index out of [0, 1)) when either length differs from
// wire.NumFields, so a field added to the wire cannot go unread.
var (
	_ = [1]struct{}{}[len(basic)-wire.NumFields]
	_ = [1]struct{}{}[len(extErrors)-wire.NumFields]
)

func fill(v [wire.NumFields]uint64) wire.PortCounters {
	return wire.PortCounters{
		SymbolErrorCounter: v[0], LinkErrorRecoveryCounter: v[1], LinkDownedCounter: v[2],
		PortRcvErrors: v[3], PortRcvRemotePhysicalErrors: v[4], PortRcvSwitchRelayErrors: v[5],
		PortXmitDiscards: v[6], PortXmitConstraintErrors: v[7], PortRcvConstraintErrors: v[8],
		LocalLinkIntegrityErrors: v[9], ExcessiveBufferOverrunErrors: v[10], VL15Dropped: v[11],
		PortXmitData: v[12], PortRcvData: v[13], PortXmitPkts: v[14], PortRcvPkts: v[15], PortXmitWait: v[16],
	}
}

func (f *umadFabric) PortCounters(l wire.Local, lid, port int, deadline time.Time) (wire.PortCounters, error) {
	p, k, err := f.port(l)
	if err != nil {
		return wire.PortCounters{}, err
	}
	if err := f.pma(p, lid, port, C.IB_GSI_PORT_COUNTERS, fmt.Sprintf("PMA PortCounters of LID %d port %d", lid, port), deadline); err != nil {
		f.dropOnOpenFailure(k, err)
		return wire.PortCounters{}, err
	}
	return countersAt(f.buf), nil
}

// countersAt decodes PortCounters from the PMA attribute data at buf.
func countersAt(buf *C.uint8_t) wire.PortCounters {
	var v [wire.NumFields]uint64
	for i, fld := range basic {
		v[i] = uint64(C.nh_decode32(buf, fld))
	}
	return fill(v)
}

// extAt decodes PortCountersExtended from the PMA attribute data at buf,
// with the 64-bit error counters when withErrors.
func extAt(buf *C.uint8_t, withErrors bool) wire.PortCountersExt {
	ext := wire.PortCountersExt{
		PortXmitData: uint64(C.nh_decode64(buf, C.IB_PC_EXT_XMT_BYTES_F)),
		PortRcvData:  uint64(C.nh_decode64(buf, C.IB_PC_EXT_RCV_BYTES_F)),
		PortXmitPkts: uint64(C.nh_decode64(buf, C.IB_PC_EXT_XMT_PKTS_F)),
		PortRcvPkts:  uint64(C.nh_decode64(buf, C.IB_PC_EXT_RCV_PKTS_F)),
	}
	if withErrors {
		var v [wire.NumFields]uint64
		for i, fld := range extErrors {
			v[i] = uint64(C.nh_decode64(buf, fld))
		}
		e := fill(v)
		ext.Errors = &e
	}
	return ext
}

// decodePMA decodes attribute data as the helper does an answer's: the
// way in for vectors laid out by the specification.
func decodePMA(data []byte) (wire.PortCounters, wire.PortCountersExt) {
	buf := (*C.uint8_t)(C.calloc(madBuf, 1))
	defer C.free(unsafe.Pointer(buf))
	C.memcpy(unsafe.Pointer(buf), unsafe.Pointer(&data[0]), C.size_t(min(len(data), madBuf)))
	return countersAt(buf), extAt(buf, true)
}

func (f *umadFabric) PortCountersExt(l wire.Local, lid, port int, withErrors bool, deadline time.Time) (wire.PortCountersExt, error) {
	p, k, err := f.port(l)
	if err != nil {
		return wire.PortCountersExt{}, err
	}
	if err := f.pma(p, lid, port, C.IB_GSI_PORT_COUNTERS_EXT, fmt.Sprintf("PMA PortCountersExtended of LID %d port %d", lid, port), deadline); err != nil {
		f.dropOnOpenFailure(k, err)
		return wire.PortCountersExt{}, err
	}
	return extAt(f.buf, withErrors), nil
}
