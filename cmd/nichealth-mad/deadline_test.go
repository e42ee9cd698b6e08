//go:build cgo

package main

import (
	"errors"
	"testing"
	"time"

	"github.com/nichealth/nichealthd/mad/wire"
)

// TestAttempt_40_12_RetriesCountedWithinTheDeadline: libibmad sends an
// unanswered MAD madTries times, each waiting the timeout it was given;
// a request of n MADs that nothing answers must still end by its
// deadline, so each MAD's timeout × madTries × the MADs left fits in what
// is left. A budget too small for a millisecond a try is refused as a
// timeout at once rather than overrun.
func TestAttempt_40_12_RetriesCountedWithinTheDeadline(t *testing.T) {
	if madTries < 2 {
		t.Fatalf("madTries %d: libibmad's default is 2 sends (one retry) and the helper keeps it", madTries)
	}
	for _, budget := range []time.Duration{time.Millisecond, 3 * time.Millisecond, 9 * time.Millisecond, 100 * time.Millisecond, 999 * time.Millisecond, 2 * time.Second, 60 * time.Second} {
		for n := 1; n <= 4; n++ {
			deadline := time.Now().Add(budget)
			ms, err := attempt(deadline, n)
			if err != nil {
				var we *wire.Error
				if !errors.As(err, &we) || we.Kind != wire.ErrTimeout {
					t.Errorf("budget %v, %d MADs: %v, want a timeout", budget, n, err)
				}
				if budget >= time.Duration(madTries*n+1)*time.Millisecond {
					t.Errorf("budget %v, %d MADs: refused although %d tries of 1 ms fit", budget, n, madTries*n)
				}
				continue
			}
			worst := time.Duration(uint(ms)) * time.Millisecond * time.Duration(madTries*n)
			if uint(ms) < 1 || worst > budget {
				t.Errorf("budget %v, %d MADs: %d ms a try, %v if nothing answers", budget, n, uint(ms), worst)
			}
		}
	}
}
