package regularfile

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrHung is in the error of a read that did not return within its
// deadline.
var ErrHung = errors.New("a hung filesystem?")

// Joined reads files as Read does, within a deadline, for a caller that
// reads the same files again and again (a daemon's reloads, a watched
// file). A read that hangs (a hung network filesystem) is abandoned after
// the deadline but stays pending, and the next read of the same path
// waits on it instead of starting another: each read blocked in the
// kernel holds an OS thread, and a read every second would otherwise end
// in thread exhaustion. The zero value is ready; it is safe for
// concurrent use.
type Joined struct {
	mu      sync.Mutex
	pending map[string]*pendingRead
}

// pendingRead is one read of a file in flight; done closes when it ends.
type pendingRead struct {
	done chan struct{}
	b    []byte
	err  error
}

// Read reads path (at most limit bytes, a regular file only), waiting at
// most deadline; a read of path still pending from an earlier call is
// joined, never duplicated.
func (j *Joined) Read(path string, limit int64, deadline time.Duration) ([]byte, error) {
	j.mu.Lock()
	r, joined := j.pending[path]
	if !joined {
		r = &pendingRead{done: make(chan struct{})}
		if j.pending == nil {
			j.pending = map[string]*pendingRead{}
		}
		j.pending[path] = r
		go func() {
			r.b, r.err = Read(path, limit)
			j.mu.Lock()
			delete(j.pending, path)
			j.mu.Unlock()
			close(r.done)
		}()
	}
	j.mu.Unlock()
	t := time.NewTimer(deadline)
	defer t.Stop()
	select {
	case <-r.done:
		return r.b, r.err
	case <-t.C:
		if joined {
			return nil, fmt.Errorf("no answer within %v; an earlier read of the file has not returned either (%w)", deadline, ErrHung)
		}
		return nil, fmt.Errorf("no answer within %v (%w)", deadline, ErrHung)
	}
}
