package dbusapi

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/nichealth/nichealthd/internal/repeats"
)

// maxQueuedSignals bounds the HealthEvent signals waiting for a bus that
// does not take them (a frozen dbus-daemon). Past it the oldest are
// dropped and counted: every event is durable in the outbox and the
// journal, and ListEvents still has it, so only the live signal is lost.
const maxQueuedSignals = 4096

// sender takes signals and refresh requests from the poll loop without
// ever blocking it, and sends them from its own goroutine: godbus's Emit
// blocks when the bus stops reading (SIGSTOPped dbus-daemon), and the poll
// loop must not (DESIGN.md section 9).
type sender struct {
	mu      sync.Mutex
	queue   []queuedSignal
	refresh bool
	dropped int
	kick    chan struct{}
	done    chan struct{}
	stopped chan struct{}
	// dropLogs keeps a slow bus to one warning a minute; droppedTotal
	// (sender goroutine only) says how many in all.
	dropLogs     repeats.Limiter
	droppedTotal int
}

type queuedSignal struct {
	rec EventRecord
	ev  signalArgs
}

type signalArgs struct {
	check, device   string
	port            uint32
	fatal, healthy  bool
	message, asJSON string
}

func newSender() *sender {
	return &sender{kick: make(chan struct{}, 1), done: make(chan struct{}), stopped: make(chan struct{}),
		dropLogs: repeats.Limiter{Window: time.Minute}}
}

func (q *sender) wake() {
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

func (q *sender) push(s queuedSignal) {
	q.mu.Lock()
	if len(q.queue) >= maxQueuedSignals {
		q.queue = q.queue[1:]
		q.dropped++
	}
	q.queue = append(q.queue, s)
	q.mu.Unlock()
	q.wake()
}

func (q *sender) wantRefresh() {
	q.mu.Lock()
	q.refresh = true
	q.mu.Unlock()
	q.wake()
}

func (q *sender) take() ([]queuedSignal, bool, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	out, r, d := q.queue, q.refresh, q.dropped
	q.queue, q.refresh, q.dropped = nil, false, 0
	return out, r, d
}

// run sends until stop; signals first, then one PropertiesChanged round,
// so a client sees the event before the property it changed.
func (s *Server) runSender() {
	q := s.out
	defer close(q.stopped)
	for {
		select {
		case <-q.done:
			return
		case <-q.kick:
		}
		sigs, refresh, dropped := q.take()
		if dropped > 0 {
			q.droppedTotal += dropped
			if ok, _ := q.dropLogs.Note("dropped", time.Now()); ok {
				s.log.Warn("D-Bus HealthEvent signals dropped: the bus did not take them in time (events stay in the outbox, the journal and ListEvents)",
					"dropped", dropped, "dropped_since_start", q.droppedTotal)
			}
		}
		for _, sg := range sigs {
			if s.closed.Load() {
				return
			}
			a := sg.ev
			s.emit(RootPath, healthSignal, sg.rec.Seq, a.check, a.device, a.port, a.fatal, a.healthy, a.message, a.asJSON)
		}
		if refresh {
			s.Refresh()
		}
	}
}

func (q *sender) stop() {
	select {
	case <-q.done:
	default:
		close(q.done)
	}
}

func encodeEvent(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
