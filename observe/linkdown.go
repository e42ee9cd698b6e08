package observe

import (
	"errors"
	"sync"
	"time"

	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/ethtool"
	"github.com/nichealth/nichealthd/topology/genl"
	"github.com/nichealth/nichealthd/topology/reader"
)

// LinkDown is why a RoCE port's link is down, as its driver said when the
// port left ACTIVE (ethtool's extended link state); empty when the driver
// gave no reason (IPoIB and most virtual netdevs have none, mlx5 only
// when its firmware knows one).
type LinkDown struct {
	// Reason and SubReason are the machine names (linkDownReason,
	// linkDownSubReason metadata: "cable_issue", "unsupported_cable");
	// Words is the reason in a sentence.
	Reason, SubReason, Words string
}

// LinkStates is the kernel's link state of a netdev: ethtool netlink on a
// real host, a simulated host's files in the test build.
type LinkStates interface {
	LinkState(netdev string) (ethtool.LinkState, error)
}

// netlinkLinkStates is LinkStates over one ethtool netlink socket, dialled
// at the first use. A kernel without ethtool netlink (before 5.6) is
// remembered: nothing is asked again.
type netlinkLinkStates struct {
	mu      sync.Mutex
	n       *ethtool.Netlink
	dialErr error
}

// linkStateTimeout bounds each receive of the link-state socket; the call
// as a whole runs under the reader's deadline.
const linkStateTimeout = 2 * time.Second

func (s *netlinkLinkStates) LinkState(netdev string) (ethtool.LinkState, error) {
	// A call that hangs in the driver keeps the socket: a later one,
	// abandoned by its own deadline, must not share it.
	if !s.mu.TryLock() {
		return ethtool.LinkState{}, errors.New("ethtool netlink: an earlier call still hangs in the driver")
	}
	defer s.mu.Unlock()
	if s.n == nil && s.dialErr == nil {
		s.n, s.dialErr = ethtool.DialNetlink(linkStateTimeout)
	}
	if s.dialErr != nil {
		return ethtool.LinkState{}, s.dialErr
	}
	return s.n.LinkState(netdev)
}

// close releases the socket, unless a call still hangs with it (that call
// keeps it, as a hung read keeps its file).
func (s *netlinkLinkStates) close() {
	if !s.mu.TryLock() {
		return
	}
	defer s.mu.Unlock()
	if s.n != nil {
		s.n.Close()
		s.n = nil
	}
}

// linkStates is the observer's source of link-down reasons: the seam's,
// or ethtool netlink.
func (o *Observer) linkStates() LinkStates {
	if o.seams.LinkStates != nil {
		return o.seams.LinkStates
	}
	if o.nlLinks == nil {
		o.nlLinks = &netlinkLinkStates{}
	}
	return o.nlLinks
}

// linkDown reads why a RoCE port that is not up went down: once, when it
// leaves ACTIVE (or is first seen down), on the reader's worker under its
// deadline, so the port-down event of this very cycle can say why. mlx5
// answers only while the carrier is down, which is then. Steady polls ask
// nothing. A netdev the driver cannot say anything for leaves LinkDown
// empty; a kernel without ethtool netlink is said once.
func (o *Observer) linkDown(p *portPlan) {
	p.LinkDown = LinkDown{}
	if p.Up() || p.Port.Port.LinkLayer != topology.LinkLayerEthernet || p.NetDev == "" {
		return
	}
	src := o.linkStates()
	var st ethtool.LinkState
	err := o.rd.Call("ethtool-linkstate:"+p.NetDev, func() error {
		var err error
		st, err = src.LinkState(p.NetDev)
		return err
	})
	if pe, ok := err.(*reader.PanicError); ok {
		panic(pe) // the source panicked on the worker: the state check's bug
	}
	switch {
	case errors.Is(err, genl.ErrNoFamily):
		if !o.linkStateUnsupported {
			o.linkStateUnsupported = true
			o.log.Info("this kernel has no ethtool netlink (Linux 5.6 or later): RoCE port-down events do not say why the link went down", "err", err)
		}
		return
	case err != nil:
		o.log.Debug("link-down reason not read", "device", p.Device.Name, "port", p.Port.Port.Num, "netdev", p.NetDev, "err", err)
		return
	}
	if st.HasExt {
		p.LinkDown = LinkDown{Reason: st.Ext.Name(), SubReason: st.Ext.SubName(st.ExtSubstate), Words: st.Reason()}
	}
}
