package observe

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/topology/ethtool"
	"github.com/nichealth/nichealthd/topology/reader"
)

// Driver statistics (counter paths "ethtool:<name>", Ethernet ports only)
// join the counter table through the same counterRead entries as files:
// all of a port's statistics share one plan entry, a reader.Source whose
// read is one GSTATS, so a netdev costs one driver call per counter tick
// however many rows read it. Each row's counterRead points at its slot in
// that sample; its value is rendered as decimal text so the counter tick
// treats it exactly like a sysfs counter.

// phyRead is the driver-statistic side of a counterRead.
type phyRead struct {
	src  ethtool.Source
	slot int
	text [24]byte // the value as decimal text, for the file-shaped path
}

// errStatAbsent is a statistic the driver does not publish: skipped
// silently every tick, like a missing counter file (seed 7.1), after the
// availability log named it.
var errStatAbsent = fmt.Errorf("driver has no such ethtool statistic: %w", fs.ErrNotExist)

// value is the statistic as the counter tick reads a file: its text, or
// the error of this tick's read.
func (pr *phyRead) value(f *reader.File) ([]byte, error) {
	if f.Err != nil {
		return nil, f.Err
	}
	v, ok := pr.src.Value(pr.slot)
	if !ok {
		return nil, errStatAbsent
	}
	return strconv.AppendUint(pr.text[:0], v, 10), nil
}

// sample returns a counter's raw text and read error: a file's, or a
// driver statistic's.
func (cr *counterRead) sample() ([]byte, error) {
	if cr.phy != nil {
		return cr.phy.value(cr.file)
	}
	return cr.file.Value(), cr.file.Err
}

// planPHY adds the port's driver-statistic rows: one source per netdev,
// opened (names resolved) now, one counterRead per statistic. A netdev the
// driver gives no statistics for (or that cannot be opened in time) leaves
// its rows missing, logged with the device's availability.
func (o *Observer) planPHY(pp *portPlan, rowIdx []int, ow owner) (present, missing []string) {
	if len(rowIdx) == 0 {
		return nil, nil
	}
	want, slotOf := []string{}, map[string]int{}
	for _, i := range rowIdx {
		stat := o.cfg.Counters[i].Path.Stat()
		if _, ok := slotOf[stat]; !ok {
			slotOf[stat] = len(want)
			want = append(want, stat)
		}
	}
	src, err := o.openPHY(pp.NetDev, want)
	if err != nil {
		o.noteStatsUnavailable(pp, err)
		for _, i := range rowIdx {
			missing = append(missing, o.cfg.Counters[i].Name)
		}
		return nil, missing
	}
	delete(o.statsUnavailable, pp.NetDev)
	f := reader.NewSource("ethtool:"+pp.NetDev, src)
	byStat := map[string]int{}
	for _, i := range rowIdx {
		stat := o.cfg.Counters[i].Path.Stat()
		if !src.Has(slotOf[stat]) {
			// Not planned: an absent statistic would be a failed reading
			// every tick. A driver that gains it is seen at the next plan
			// build (reload, rediscovery).
			missing = append(missing, o.cfg.Counters[i].Name)
			continue
		}
		present = append(present, o.cfg.Counters[i].Name)
		if j, ok := byStat[stat]; ok {
			pp.counters[j].rows = append(pp.counters[j].rows, i)
			continue
		}
		byStat[stat] = len(pp.counters)
		pp.counters = append(pp.counters, counterRead{file: f, rows: []int{i}, phy: &phyRead{src: src, slot: slotOf[stat]}})
	}
	if len(byStat) == 0 {
		src.Close() // nothing to read: no driver call per tick
		return present, missing
	}
	o.files = append(o.files, f)
	o.counter.add(f, ow)
	return present, missing
}

// openPHY opens netdev's statistics through the reader's deadline: the
// names are asked once per plan build, and a driver that hangs there must
// neither stall the loop nor, plan build after plan build, strand one more
// call each time (a name still hanging fails at once). A source whose open
// returns after the deadline is closed by whichever side sees it last. A
// failed open leaves src a plain nil: nothing to keep, nothing to close.
func (o *Observer) openPHY(netdev string, want []string) (ethtool.Source, error) {
	if netdev == "" {
		return nil, errors.New("the port has no netdev")
	}
	var (
		mu        sync.Mutex
		src       ethtool.Source
		abandoned bool
	)
	open := o.seams.openStats()
	err := o.rd.Call("ethtool-names:"+netdev, func() error {
		s, err := open(netdev, want)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if abandoned {
			s.Close()
			return nil
		}
		src = s
		return nil
	})
	if pe, ok := err.(*reader.PanicError); ok {
		panic(pe) // the opener panicked on the worker: this check's bug
	}
	if err != nil {
		mu.Lock()
		defer mu.Unlock()
		abandoned = true
		if src != nil {
			src.Close()
		}
		// Already names the netdev ("ethtool <netdev>: ...", or the
		// call's name when it hung): wrapped again it read twice.
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	if src == nil {
		// An opener that broke its contract: (nil, nil).
		return nil, fmt.Errorf("ethtool %s: the statistics opener returned no source", netdev)
	}
	return src, nil
}

// noteStatsUnavailable says once per netdev and reason that its driver
// statistics cannot be read: a plan rebuilt by a reload or a rediscovery
// finds the same absent netdev or statistics-less driver again and must
// not repeat it.
func (o *Observer) noteStatsUnavailable(pp *portPlan, err error) {
	if o.statsUnavailable == nil {
		o.statsUnavailable = map[string]string{}
	}
	key := pp.NetDev
	if key == "" {
		key = pp.Device.Name + "/" + strconv.Itoa(pp.Port.Port.Num)
	}
	if o.statsUnavailable[key] == err.Error() {
		return
	}
	o.statsUnavailable[key] = err.Error()
	level, msg := slog.LevelWarn, "driver statistics unavailable; the ethtool: counters of this port are skipped until the next rediscovery or reload"
	if errors.Is(err, unix.ENODEV) {
		// No such netdev in this network namespace, although the port's
		// files name it: the rest of the port is read, discovery looks for
		// the netdev again every minute, and after a udev rename it plans
		// the new name. A gap in one port's PHY counters, said once at
		// info (a driver without statistics, below, is a lasting one).
		level, msg = slog.LevelInfo, "driver statistics unavailable: no such netdev in this network namespace; the ethtool: counters of this port are skipped until a rediscovery finds it"
	}
	o.log.Log(context.Background(), level, msg,
		"device", pp.Device.Name, "port", pp.Port.Port.Num, "netdev", pp.NetDev, "err", err.Error(),
		"fix", statsFix(err))
}

// statsNameStale handles a driver-statistics call that fails with ENODEV:
// the call goes by name, and the name no longer resolves (udev renamed the
// netdev, it was removed or moved to another network namespace). After a
// rename the port's sysfs files still read through their kept descriptors
// (sysfs follows the device), so this failure is the only sign that the
// plan holds a stale name: it asks for one rediscovery, which plans the
// port under the netdev's new name, or without driver statistics when the
// netdev is gone. Once per source: the plan the rediscovery builds holds
// new sources, and a rediscovery that fails is not retried every tick.
func (o *Observer) statsNameStale(pp *portPlan, cr *counterRead) {
	if o.statsStale[cr.file.Path] {
		return
	}
	if o.statsStale == nil {
		o.statsStale = map[string]bool{}
	}
	o.statsStale[cr.file.Path] = true
	o.netdevGone = true
	o.log.Warn("the RoCE netdev's driver statistics call fails with ENODEV: its name no longer resolves; looking up the device's netdevs again now",
		"device", pp.Device.Name, "port", pp.Port.Port.Num, "netdev", pp.NetDev, "file", cr.file.Path,
		"fix", "expected after a udev rename (the port is then planned under its new name); if the netdev was removed or moved to another network namespace, check ip link")
}

// statsFix is the operator's next step for a netdev whose statistics
// cannot be read.
func statsFix(err error) string {
	switch {
	case errors.Is(err, unix.ENODEV):
		return "the netdev is absent from this network namespace (removed, renamed by udev, or moved to another namespace): check ip link; it is looked up again every minute and at every reload"
	case errors.Is(err, ethtool.ErrNoStats), errors.Is(err, unix.EOPNOTSUPP):
		return "the driver publishes no ethtool statistics; disable the ethtool: counters under [[counterDetection.counters]] if this is permanent"
	}
	return "expected on drivers without ethtool statistics; disable the ethtool: counters under [[counterDetection.counters]] if this is permanent"
}
