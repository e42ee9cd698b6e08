package kmsg

// Splitter cuts a byte stream into records. /dev/kmsg hands out exactly
// one record per read; a FIFO standing in for it (a test, the simulator)
// may hand out several, or part of one. A record is its header line and
// the dictionary lines (starting with a space) that follow it; it is
// complete when the next record starts, or when a read ends right after
// a newline. A record longer than Max is dropped and counted, and the
// stream resynchronises at the next record's start.
//
// The one ambiguity: dictionary lines that arrive in a later read than
// their record (a FIFO writer splitting a record exactly at a line end)
// are orphans, and Parse refuses them as malformed.
type Splitter struct {
	// Max bounds a record; 0 means MaxRecord.
	Max int
	// Oversized counts records dropped for exceeding Max.
	Oversized uint64

	buf      []byte
	skipping bool // discarding an oversized record
	prevNL   bool // while skipping: the last byte seen was a newline
}

func (s *Splitter) max() int {
	if s.Max <= 0 {
		return MaxRecord
	}
	return s.Max
}

// Feed takes the bytes of one read and calls emit with every record they
// complete. The slice passed to emit is valid only during the call.
func (s *Splitter) Feed(b []byte, emit func([]byte)) {
	if s.skipping {
		b = s.skip(b)
		if s.skipping || len(b) == 0 {
			return
		}
	}
	s.buf = append(s.buf, b...)
	start := 0
	for i := 1; i < len(s.buf); i++ {
		if s.buf[i-1] == '\n' && s.buf[i] != ' ' {
			s.emit(s.buf[start:i], emit)
			start = i
		}
	}
	if start < len(s.buf) && s.buf[len(s.buf)-1] == '\n' {
		s.emit(s.buf[start:], emit)
		start = len(s.buf)
	}
	rest := len(s.buf) - start
	if rest > s.max() {
		s.Oversized++
		s.skipping, s.prevNL = true, false
		s.buf = s.buf[:0]
		return
	}
	n := copy(s.buf, s.buf[start:])
	s.buf = s.buf[:n]
}

func (s *Splitter) emit(rec []byte, emit func([]byte)) {
	switch {
	case len(rec) == 1 && rec[0] == '\n':
		// An empty line between records carries nothing.
	case len(rec) > s.max():
		s.Oversized++
	default:
		emit(rec)
	}
}

// skip discards the rest of an oversized record and returns what follows
// it.
func (s *Splitter) skip(b []byte) []byte {
	for i, c := range b {
		if s.prevNL && c != ' ' {
			s.skipping = false
			return b[i:]
		}
		s.prevNL = c == '\n'
	}
	if s.prevNL {
		// The read ended with the record: the next one starts afresh.
		s.skipping = false
	}
	return nil
}

// Reset forgets a partial record (the source was reopened).
func (s *Splitter) Reset() {
	s.buf, s.skipping, s.prevNL = s.buf[:0], false, false
}
