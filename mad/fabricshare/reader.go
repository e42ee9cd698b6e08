package fabricshare

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/nichealth/nichealthd/internal/regularfile"
	"github.com/nichealth/nichealthd/internal/repeats"
	"github.com/nichealth/nichealthd/mad"
	"github.com/nichealth/nichealthd/mad/readcore"
	"github.com/nichealth/nichealthd/mad/wire"
)

// ShareClient is what the reader asks of the MAD helper (*mad.Client).
type ShareClient interface {
	Ports(ctx context.Context, timeout time.Duration) ([]wire.LocalPort, error)
	NodeInfo(ctx context.Context, l wire.Local, lid int, timeout time.Duration) (wire.Node, error)
	readcore.Client
}

// ShareConfig is how the reader reads.
type ShareConfig struct {
	// Assignment is the assignment file ("" reads nothing). Optional
	// says it is the conventional path, quietly nothing while absent.
	Assignment string
	Optional   bool
	// Host is the name whose list the file is read for.
	Host string
	// Interval is the time over which every assigned port is read once;
	// Timeout bounds one request to the helper.
	Interval time.Duration
	Timeout  time.Duration
	// UmadDir is where the umad devices are (<devRoot>/infiniband): with
	// none there, the helper is not started.
	UmadDir string
}

// SharePort is what the reader knows of one assigned port. Published
// readings are never modified.
type SharePort struct {
	Entry
	// Read says Counters hold a reading, taken at ReadAt; in the order
	// of wire.Fields. Wide says the error counters are PortCountersExtended's
	// 64-bit ones; the data counters are 64-bit whenever the switch
	// offers PortCountersExtended at all.
	Read     bool
	ReadAt   time.Time
	Counters [wire.NumFields]uint64
	Wide     bool
	// Errors counts failed reads since start (or since the port was
	// assigned); Err says why the last attempt failed ("" when it did not).
	Errors uint64
	Err    string
	// Refused says why the entry is not read at all: what answers at
	// its switch's LID is not a switch, or has no such port. Said once;
	// the entry is not asked again while it stays in the list.
	Refused string
}

// ShareReading is one published state of the share. It is never modified once
// published.
type ShareReading struct {
	// Gen increments with every publication.
	Gen uint64
	At  time.Time
	// File is the assignment file ("" when none is configured).
	File string
	// Valid is false while the last version of the file was refused;
	// Refused says why. The list in force (Ports) is the last accepted.
	Valid   bool
	Refused string
	// Helper is the MAD helper's state.
	Helper mad.State
	// Unavailable says why no port can be read on this host at all (""
	// when it can).
	Unavailable string
	// Ports is the list in force, by switch GUID and port.
	Ports []*SharePort
}

// ShareReader reads the share on its own goroutine. Its Configure (which
// reads the assignment file again: a reload, systemctl reload or SIGHUP,
// reloads the assignment too), Latest and Close are the MAD readers'
// shared core's.
type ShareReader struct {
	readcore.Core[ShareConfig, ShareReading]
	loop *readcore.Loop[ShareConfig, ShareReading]
	c    ShareClient

	// Owned by the goroutine:
	files     regularfile.Joined
	watched   string
	stopWatch context.CancelFunc
	rewatch   func()
	list      []Entry
	ports     map[portKey]*SharePort
	switches  map[string]*switchState
	// tried is when each listed port was last asked for (read or not):
	// a round reads the longest-waiting first, so a list that changes
	// often keeps each unchanged port's place.
	tried     map[portKey]time.Time
	valid     bool
	refused   string
	absent    bool
	src       wire.Local
	logs      repeats.Limiter
	gen       uint64
	round     uint64
	published time.Time
	timer     *time.Timer
}

type portKey struct {
	guid string
	port int
}

// switchState is what one switch's ports share within a round: whether
// its LID was checked, and what its PMA offers.
type switchState struct {
	checked uint64 // round of the last NodeInfo check
	err     string // why its ports cannot be read this round
	cpi     *wire.ClassPortInfo
	cpiAt   uint64
	// numPorts is what its NodeInfo says; refused why none of its
	// entries can be read (not a switch).
	numPorts int
	refused  string
}

// cpiEvery is how many rounds a switch's ClassPortInfo is trusted (a
// firmware upgrade may change it; it costs one GMP).
const cpiEvery = 10

// publishEvery bounds how often a round in progress publishes: each
// publication copies the list's pointers.
const publishEvery = 2 * time.Second

// StartShareReader runs the reader over c; Close ends it.
func StartShareReader(cfg ShareConfig, c ShareClient, log *slog.Logger) *ShareReader {
	l := readcore.New(cfg, &ShareReading{At: time.Now(), File: cfg.Assignment, Valid: true, Helper: c.State()}, c, log)
	r := &ShareReader{Core: l.Core(), loop: l, c: c,
		ports: map[portKey]*SharePort{}, switches: map[string]*switchState{}, tried: map[portKey]time.Time{}, valid: true,
		logs: repeats.Limiter{Window: time.Hour}, timer: time.NewTimer(time.Hour)}
	r.timer.Stop()
	l.Go(r.run)
	return r
}

func (r *ShareReader) run(ctx context.Context) {
	defer func() {
		if r.stopWatch != nil {
			r.stopWatch()
		}
	}()
	cfg := r.loop.Config()
	for ctx.Err() == nil {
		cfg = r.refresh(ctx)
		start := time.Now()
		r.round++
		restart := r.readRound(ctx, cfg, start)
		r.publish(cfg)
		if restart {
			continue
		}
		// The next round starts an interval after this one did (a round
		// that overran its interval is followed at once); a changed file
		// or configuration is read at once.
		for ctx.Err() == nil && !r.sleepUntil(ctx, start.Add(cfg.Interval)) {
			if r.changed(ctx, &cfg) {
				break
			}
		}
	}
}

// changed reads the file and the configuration again after a wake-up and
// reports whether the list or the pace changed (a new round starts);
// otherwise the round goes on where it was, so a reload now and then
// does not starve the end of a long list.
func (r *ShareReader) changed(ctx context.Context, cfg *ShareConfig) bool {
	before := r.list
	now := r.refresh(ctx)
	differs := !slices.Equal(before, r.list) || now.Interval != cfg.Interval || now.Timeout != cfg.Timeout
	*cfg = now
	r.publish(now)
	return differs
}

// refresh takes the current configuration and reads the file again; it
// returns the configuration in force. It runs at every round's start and
// every wake-up (the file changed, a reload): a watch that could not be
// set up, or a directory that appeared later, is caught within an
// interval.
func (r *ShareReader) refresh(ctx context.Context) ShareConfig {
	cfg := r.loop.Config()
	if cfg.Assignment != r.watched {
		if r.stopWatch != nil {
			r.stopWatch()
			r.stopWatch, r.rewatch = nil, nil
		}
		r.watched = cfg.Assignment
		if cfg.Assignment != "" {
			wctx, cancel := context.WithCancel(ctx)
			r.stopWatch = cancel
			r.rewatch = watch(wctx, cfg.Assignment, r.loop.Poke, r.loop.Log().Warn)
		}
	}
	if r.rewatch != nil {
		// A directory created since start (or back after a removal).
		r.rewatch()
	}
	r.load(cfg)
	return cfg
}

// load reads and applies the assignment file; a refused file keeps the
// list in force.
func (r *ShareReader) load(cfg ShareConfig) {
	if cfg.Assignment == "" {
		r.apply(nil)
		r.valid, r.refused, r.absent = true, "", false
		return
	}
	b, err := readFile(&r.files, cfg.Assignment, readDeadline)
	if errors.Is(err, errAbsent) {
		if !r.absent && len(r.list) > 0 || !r.absent && !cfg.Optional {
			r.loop.Log().Info("no fabric assignment file: no switch port of the fabric is read by this host", "file", cfg.Assignment)
		}
		r.absent = true
		r.apply(nil)
		r.valid, r.refused = true, ""
		return
	}
	var list []Entry
	if err == nil {
		list, err = Parse(b, cfg.Host)
		if err != nil {
			err = fmt.Errorf("%s: %w", cfg.Assignment, err)
		}
	}
	if err != nil {
		r.valid, r.refused = false, err.Error()
		if ok, n := r.logs.Note("refused "+r.refused, time.Now()); ok {
			r.loop.Log().Warn("fabric assignment refused; the list in force is kept", "file", cfg.Assignment, "reason", r.refused, "inForce", len(r.list), "suppressed", n)
		}
		return
	}
	r.absent = false
	r.valid, r.refused = true, ""
	if !slices.Equal(list, r.list) {
		r.loop.Log().Info("fabric assignment in force", "file", cfg.Assignment, "host", cfg.Host, "ports", len(list), "switches", countSwitches(list))
		r.apply(list)
	}
}

func countSwitches(list []Entry) int {
	n := 0
	for i := range list {
		if i == 0 || list[i].SwitchGUID != list[i-1].SwitchGUID {
			n++
		}
	}
	return n
}

// apply puts list in force: ports kept keep their readings and error
// counts, ports dropped are forgotten, and so are switches no longer
// listed (memory follows the list).
func (r *ShareReader) apply(list []Entry) {
	if slices.Equal(list, r.list) {
		return
	}
	r.list = list
	keep := make(map[portKey]*SharePort, len(list))
	tried := make(map[portKey]time.Time, len(list))
	sw := map[string]*switchState{}
	for _, e := range list {
		k := portKey{e.SwitchGUID, e.Port}
		if t, ok := r.tried[k]; ok {
			tried[k] = t
		}
		p := r.ports[k]
		if p == nil || p.Entry != e {
			np := &SharePort{Entry: e}
			if p != nil && p.SwitchLID == e.SwitchLID {
				np.Errors = p.Errors
			}
			p = np
		}
		keep[k] = p
		if s := r.switches[e.SwitchGUID]; s != nil {
			sw[e.SwitchGUID] = s
		}
	}
	r.ports, r.switches, r.tried = keep, sw, tried
}

// sleepUntil waits until t; false when woken first (or ctx ended).
func (r *ShareReader) sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	r.timer.Reset(d)
	defer r.timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-r.loop.Wake():
		return false
	case <-r.timer.C:
		return true
	}
}

// readRound reads every port of the list once, the reads spread evenly
// over the interval. A change of the list or the pace ends the round
// early (restart): the next one starts with the new list at once.
func (r *ShareReader) readRound(ctx context.Context, cfg ShareConfig, start time.Time) (restart bool) {
	if len(r.list) == 0 {
		return false
	}
	if why := readcore.UmadMissing(cfg.UmadDir); why != "" {
		r.loop.SayOnce("unavailable", "the fabric's assigned switch ports are not read on this host", "reason", why)
		return false
	}
	if r.c.State().Health == mad.Unavailable {
		r.loop.SayOnce("unavailable", "the fabric's assigned switch ports are not read on this host", "reason", r.c.State().Reason)
	}
	list := r.order()
	var failed map[string]*failure
	for i, e := range list {
		if p := r.ports[portKey{e.SwitchGUID, e.Port}]; p != nil && p.Refused != "" {
			continue
		}
		for i > 0 && ctx.Err() == nil && !r.sleepUntil(ctx, due(start, i, len(list), cfg.Interval)) {
			if r.changed(ctx, &cfg) {
				return true
			}
		}
		if ctx.Err() != nil {
			return false
		}
		err := r.readPort(ctx, cfg, e)
		if err != nil {
			if failed == nil {
				failed = map[string]*failure{}
			}
			f := failed[e.SwitchGUID]
			if f == nil {
				f = &failure{reason: err.Error()}
				failed[e.SwitchGUID] = f
			}
			f.ports++
		}
		if errors.Is(err, mad.ErrNotRunning) || errors.Is(err, mad.ErrLost) || errors.Is(err, errNoSource) || ctx.Err() != nil {
			// The helper is backing off (it says when it is started
			// again), or no local port can send: ask nothing more this
			// round.
			break
		}
		if time.Since(r.published) >= publishEvery {
			r.publish(cfg)
		}
	}
	r.logFailures(failed)
	return false
}

func (r *ShareReader) publish(cfg ShareConfig) {
	r.gen++
	now := time.Now()
	r.published = now
	rd := &ShareReading{Gen: r.gen, At: now, File: cfg.Assignment, Valid: r.valid, Refused: r.refused, Helper: r.c.State(),
		Ports: make([]*SharePort, 0, len(r.list))}
	if len(r.list) > 0 {
		rd.Unavailable = readcore.Unavailable(cfg.UmadDir, rd.Helper)
	}
	for _, e := range r.list {
		if p := r.ports[portKey{e.SwitchGUID, e.Port}]; p != nil {
			rd.Ports = append(rd.Ports, p)
		}
	}
	r.loop.Publish(rd)
}
