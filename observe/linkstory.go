package observe

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/topology"
	"github.com/nichealth/nichealthd/topology/devlink"
	"github.com/nichealth/nichealthd/topology/ethtool"
	"github.com/nichealth/nichealthd/topology/genl"
	"github.com/nichealth/nichealthd/topology/module"
)

// Modules reads a netdev's transceiver: ethtool netlink on a real host, a
// simulated host's dumps in the test build.
type Modules interface {
	Module(netdev string) (module.Memory, error)
}

// Devlink reads the devlink family: health reporters and versions.
type Devlink interface {
	Reporters() ([]devlink.Reporter, error)
	Infos() ([]devlink.Info, error)
}

// storyEvery is the cadence of the link story's pass: transceiver
// diagnostics and firmware health change over minutes (a module warming
// up, a laser ageing), and each module read is several firmware commands.
const storyEvery = time.Minute

// storySocketTimeout bounds each receive of the pass's sockets.
const storySocketTimeout = 5 * time.Second

// storySlow is how long a pass may run before it is said to hang (once):
// a driver call that never returns keeps the pass's goroutine, never a
// poll.
const storySlow = 2 * time.Minute

// LinkStory is what the last pass over the links' own story read: each
// RoCE port's transceiver and devlink's reporters and versions. The pass
// runs on a goroutine of its own, every storyEvery and when a port leaves
// ACTIVE; a cycle hands on what the last finished pass read (New says a
// pass finished since the previous cycle).
type LinkStory struct {
	// Open says the pass runs (the daemon's run; a one-shot check reads
	// none of this).
	Open bool
	New  bool
	At   time.Time
	// Modules has one reading per RoCE port with a netdev.
	Modules []ModuleReading
	// Devlink is nil when devlink was not read (no family: DevlinkErr
	// says so).
	Reporters  []devlink.Reporter
	Infos      []devlink.Info
	DevlinkErr error
}

// ModuleReading is one port's transceiver as a pass read it.
type ModuleReading struct {
	Device string
	Port   int
	NetDev string
	// Up: the port was up when the pass was asked for (lanes of a port
	// that is not up carry nothing, and are not judged on their low side).
	Up     bool
	Module module.Module
	// Err is why it could not be read: EOPNOTSUPP (no module support or
	// no module), EPERM (CAP_NET_ADMIN missing), ENODEV, a timeout.
	Err error
}

// storyTarget is a port the pass reads the transceiver of.
type storyTarget struct {
	device string
	port   int
	netdev string
	up     bool
	// state is the port's link state and link-down reason as the
	// observer last saw them: a cage that answered "no module" is read
	// again only when it changes.
	state string
}

// emptyCage is a cage that answered "no module" (module.ErrNoModule; mlx5
// answers EIO, and before late-2025 kernels logged "query_mcia_reg failed"
// at error level for every such read: once a minute per empty cage is
// millions of kernel log lines a day on a fleet), with the port state it
// answered in and the answer, which stands for it until the state changes.
type emptyCage struct {
	state string
	err   error
}

// noModule: the read says no module answers in the cage.
func noModule(err error) bool {
	return errors.Is(err, module.ErrNoModule) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENODEV)
}

// storyReader runs the pass.
type storyReader struct {
	mods Modules
	dl   Devlink
	log  *slog.Logger

	trigger chan struct{}
	stop    chan struct{}
	done    chan struct{}

	mu      sync.Mutex
	targets []storyTarget
	result  LinkStory
	gen     uint64
	started time.Time // of the pass running now (zero: none)
	// said holds the unavailable reads said once (a key per reason).
	said map[string]bool
	// empty holds, by netdev, the cages that answered "no module" (only
	// the pass's goroutine touches it).
	empty map[string]emptyCage
	// now is the clock and ticker the pass's cadence: a test's simulated
	// minutes, or time.Now and time.NewTicker.
	now    func() time.Time
	ticker func(time.Duration) (<-chan time.Time, func())
}

func realTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

func newStoryReader(mods Modules, dl Devlink, log *slog.Logger) *storyReader {
	return &storyReader{mods: mods, dl: dl, log: log, trigger: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		said: map[string]bool{}, empty: map[string]emptyCage{}, now: time.Now, ticker: realTicker}
}

// ask runs a pass soon (a port left ACTIVE).
func (s *storyReader) ask() {
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

func (s *storyReader) close() {
	close(s.stop)
	// The loop may hang in a driver call: it is not waited for.
}

func (s *storyReader) setTargets(t []storyTarget) {
	s.mu.Lock()
	s.targets = t
	s.mu.Unlock()
}

func (s *storyReader) loop() {
	defer close(s.done)
	tick, stop := s.ticker(storyEvery)
	defer stop()
	s.pass()
	for {
		select {
		case <-s.stop:
			return
		case <-tick:
		case <-s.trigger:
		}
		s.pass()
	}
}

func (s *storyReader) pass() {
	s.mu.Lock()
	targets := append([]storyTarget(nil), s.targets...)
	s.started = s.now()
	s.mu.Unlock()
	out := LinkStory{Open: true}
	empty := make(map[string]emptyCage, len(s.empty))
	for _, t := range targets {
		r := ModuleReading{Device: t.device, Port: t.port, NetDev: t.netdev, Up: t.up}
		// A cage that answered "no module" is not asked again while its
		// port stays as it was: a module plugged in changes the link's
		// state or its link-down reason. An up port always has a module
		// (a "no module" answer then is a glitch), so its answer is not
		// remembered and its cage is read every pass.
		if e, ok := s.empty[t.netdev]; ok && e.state == t.state {
			r.Err = e.err
			empty[t.netdev] = e
			out.Modules = append(out.Modules, r)
			continue
		}
		mem, err := s.mods.Module(t.netdev)
		if err == nil {
			r.Module = module.Decode(mem)
		} else {
			r.Err = err
			s.sayOnce(err, t.netdev)
			if noModule(err) && !t.up {
				empty[t.netdev] = emptyCage{state: t.state, err: err}
			}
		}
		out.Modules = append(out.Modules, r)
	}
	s.empty = empty
	if s.dl != nil {
		out.Reporters, out.DevlinkErr = s.dl.Reporters()
		if out.DevlinkErr == nil {
			out.Infos, out.DevlinkErr = s.dl.Infos()
		}
		if out.DevlinkErr != nil {
			s.sayOnce(out.DevlinkErr, "devlink")
		}
	}
	out.At = s.now()
	s.mu.Lock()
	s.result = out
	s.gen++
	s.started = time.Time{}
	s.mu.Unlock()
}

// sayOnce logs why something cannot be read, once per reason: a host
// without these interfaces logs nothing more than once.
func (s *storyReader) sayOnce(err error, what string) {
	var key, msg string
	switch {
	case errors.Is(err, genl.ErrNoFamily):
		key, msg = "nofamily:"+what, "the kernel does not offer this netlink family: not read"
	case errors.Is(err, unix.EPERM):
		key, msg = "eperm", "transceiver diagnostics need CAP_NET_ADMIN (ETHTOOL_MSG_MODULE_EEPROM_GET): install the unit drop-in that grants it, or leave them unread"
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENODEV), errors.Is(err, unix.EIO), errors.Is(err, unix.EINVAL):
		key, msg = "unsupported:"+what, "no transceiver diagnostics for this netdev (no module, or a driver without them)"
	default:
		key, msg = "err:"+what, "link story read failed"
	}
	s.mu.Lock()
	seen := s.said[key]
	if len(s.said) < 4096 {
		s.said[key] = true
	}
	s.mu.Unlock()
	if !seen {
		s.log.Info(msg, "what", what, "err", err)
	}
}

// take returns the last pass's result when it is newer than gen, and
// whether a pass has been running for longer than storySlow.
func (s *storyReader) take(gen uint64, now time.Time) (LinkStory, uint64, bool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	slow := !s.started.IsZero() && now.Sub(s.started) > storySlow
	if s.gen == gen {
		return LinkStory{}, gen, false, slow
	}
	return s.result, s.gen, true, slow
}

// netlinkModules reads transceivers over one ethtool netlink socket.
type netlinkModules struct {
	n       *ethtool.Netlink
	dialErr error
}

func (m *netlinkModules) Module(netdev string) (module.Memory, error) {
	if m.n == nil && m.dialErr == nil {
		m.n, m.dialErr = ethtool.DialNetlink(storySocketTimeout)
	}
	if m.dialErr != nil {
		return module.Memory{}, m.dialErr
	}
	return m.n.Module(netdev)
}

// netlinkDevlink reads devlink over one socket.
type netlinkDevlink struct {
	c       *devlink.Client
	dialErr error
}

func (d *netlinkDevlink) dial() error {
	if d.c == nil && d.dialErr == nil {
		d.c, d.dialErr = devlink.Dial(storySocketTimeout)
	}
	return d.dialErr
}

func (d *netlinkDevlink) Reporters() ([]devlink.Reporter, error) {
	if err := d.dial(); err != nil {
		return nil, err
	}
	return d.c.Reporters()
}

func (d *netlinkDevlink) Infos() ([]devlink.Info, error) {
	if err := d.dial(); err != nil {
		return nil, err
	}
	return d.c.Infos()
}

// OpenLinkStory starts the pass (the daemon's run). Its sources are the
// seams' or netlink.
func (o *Observer) OpenLinkStory() {
	if o.story != nil {
		return
	}
	var mods Modules = &netlinkModules{}
	if o.seams.Modules != nil {
		mods = o.seams.Modules
	}
	var dl Devlink = &netlinkDevlink{}
	if o.seams.Devlink != nil {
		dl = o.seams.Devlink
	}
	o.story = newStoryReader(mods, dl, o.log)
	// The first pass runs at once: it is handed the ports first, or the
	// transceivers would wait a minute for the next one.
	o.storyTargets()
	go o.story.loop()
	if o.seams.Devlink == nil {
		go o.story.watchDevlink()
	}
}

// watchDevlink asks for a pass whenever the kernel announces a health
// report or a recovery (devlink's "config" multicast group), so a
// fw_fatal is judged within a poll, not a minute later. Without devlink,
// or without the group, the minute's pass is all there is; a lost
// announcement (ErrOverrun) asks for a pass too, which reads everything.
func (s *storyReader) watchDevlink() {
	w, err := devlink.Watch(time.Second)
	if err != nil {
		if !errors.Is(err, genl.ErrNoFamily) {
			s.log.Info("devlink health announcements not subscribed; reporters are read once a minute", "err", err)
		}
		return
	}
	defer w.Close()
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		reps, err := w.Next()
		switch {
		case errors.Is(err, genl.ErrTimeout):
		case errors.Is(err, genl.ErrOverrun), err == nil && len(reps) > 0:
			s.ask()
		case err != nil:
			s.log.Info("devlink health announcements ended; reporters are read once a minute", "err", err)
			return
		}
	}
}

// storyTargets hands the pass the RoCE ports of the plan, each with its
// state (link, operstate, link-down reason).
func (o *Observer) storyTargets() {
	if o.story == nil {
		return
	}
	var t []storyTarget
	for _, p := range o.ports {
		if p.Port.Port.LinkLayer == topology.LinkLayerEthernet && p.NetDev != "" {
			t = append(t, storyTarget{device: p.Device.Name, port: p.Port.Port.Num, netdev: p.NetDev, up: p.Up(),
				state: fmt.Sprintf("%v|%s|%s|%s", p.Link, p.Operstate, p.LinkDown.Reason, p.LinkDown.SubReason)})
		}
	}
	o.story.setTargets(t)
}

// linkStoryStep hands the cycle the last finished pass, and tells the
// pass which ports to read and in which state (when the plan, a port's
// activity or its state changed; a port that left ACTIVE asks for a pass
// now).
func (o *Observer) linkStoryStep() {
	out := &o.obs.LinkStory
	out.New = false
	if o.story == nil {
		out.Open = false
		return
	}
	if o.activeChanged || o.storyPlan != o.planGen || o.storyStale {
		o.storyPlan, o.storyStale = o.planGen, false
		o.storyTargets()
		if o.activeChanged {
			o.story.ask()
		}
	}
	r, gen, ok, slow := o.story.take(o.storyGen, o.obs.Now)
	if slow && !o.storySlowSaid {
		o.storySlowSaid = true
		o.log.Warn("the transceiver and devlink pass has been running for minutes: a driver call hangs; the poll loop is not affected", "after", storySlow)
	}
	if !ok {
		return
	}
	o.storyGen, o.storySlowSaid = gen, false
	*out = r
	out.New = true
	o.viewChanged = true
}

var linkStoryChecks = []string{event.TransceiverCheck, event.FirmwareHealthCheck}
