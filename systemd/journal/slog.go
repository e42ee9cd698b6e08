package journal

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unicode"

	sdjournal "github.com/coreos/go-systemd/v22/journal"
)

// NewSlogHandler returns a slog.Handler that writes each record as one
// structured journal entry: PRIORITY from the level, SYSLOG_IDENTIFIER=
// nichealthd, CODE_FILE/CODE_LINE/CODE_FUNC of the call site, and every
// attribute as its own upper-cased field (groups joined with '_'), e.g.
// slog.String("device", "mlx5_0") becomes DEVICE=mlx5_0. MESSAGE carries
// the attributes too, logfmt-style, because plain `journalctl -u nichealthd`
// shows only MESSAGE and an operator must see the device, file and fix
// there. Attributes named like fields journald interprets (MESSAGE,
// PRIORITY, ERRNO, ...) get the META_ prefix. A nil level means Info.
//
// Handle returns the socket error when journald cannot be reached; slog
// drops it, so use this handler only where the journal exists (see
// ChooseLogHandler).
func NewSlogHandler(level slog.Leveler) slog.Handler {
	return newSlogHandler(level, sdjournal.Send)
}

func newSlogHandler(level slog.Leveler, send sendFunc) *slogHandler {
	if level == nil {
		level = slog.LevelInfo
	}
	return &slogHandler{level: level, send: send}
}

// ChooseLogHandler picks where the daemon's own logs go: the journal, as
// structured entries, when the process was started by systemd with stderr
// connected to the journal (JOURNAL_STREAM matches stderr) and journald's
// socket answers; otherwise a text handler on w (normally os.Stderr), which
// is what an operator running the daemon in a shell or a test wants.
func ChooseLogHandler(w io.Writer, level slog.Leveler) slog.Handler {
	return chooseLogHandler(w, level, sdjournal.StderrIsJournalStream, sdjournal.Enabled, sdjournal.Send)
}

func chooseLogHandler(w io.Writer, level slog.Leveler, stream func() (bool, error), enabled func() bool, send sendFunc) slog.Handler {
	if ok, err := stream(); err == nil && ok && enabled() {
		return newSlogHandler(level, send)
	}
	return slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})
}

type logField struct {
	key string // dotted slog key, for MESSAGE
	val string
}

type slogHandler struct {
	level  slog.Leveler
	send   sendFunc
	pre    []logField // from WithAttrs
	prefix string     // open groups, "a.b."
}

func (h *slogHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

func (h *slogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	h2 := *h
	h2.pre = appendAttrs(append([]logField(nil), h.pre...), h.prefix, attrs)
	return &h2
}

func (h *slogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.prefix = h.prefix + name + "."
	return &h2
}

func (h *slogHandler) Handle(_ context.Context, r slog.Record) error {
	fields := append([]logField(nil), h.pre...)
	r.Attrs(func(a slog.Attr) bool {
		fields = appendAttrs(fields, h.prefix, []slog.Attr{a})
		return true
	})

	var msg strings.Builder
	msg.WriteString(r.Message)
	vars := make(map[string]string, len(fields)+4)
	vars[FieldSyslogIdentifier] = SyslogIdentifier
	if r.PC != 0 {
		fr, _ := runtime.CallersFrames([]uintptr{r.PC}).Next()
		if fr.File != "" {
			vars["CODE_FILE"] = fr.File
			vars["CODE_LINE"] = strconv.Itoa(fr.Line)
			vars["CODE_FUNC"] = fr.Function
		}
	}
	for _, f := range fields {
		msg.WriteByte(' ')
		msg.WriteString(f.key)
		msg.WriteByte('=')
		msg.WriteString(logfmtValue(f.val))

		name := FieldName(strings.ReplaceAll(f.key, ".", "_"))
		if name == "" {
			continue
		}
		if isJournalReserved(name) {
			name = truncate(MetadataPrefix+name, maxFieldName)
		}
		putUnique(vars, name, f.val)
	}
	return h.send(msg.String(), levelPriority(r.Level), vars)
}

func appendAttrs(dst []logField, prefix string, attrs []slog.Attr) []logField {
	for _, a := range attrs {
		v := a.Value.Resolve()
		if v.Kind() == slog.KindGroup {
			sub := v.Group()
			if len(sub) == 0 {
				continue
			}
			p := prefix
			if a.Key != "" {
				p += a.Key + "."
			}
			dst = appendAttrs(dst, p, sub)
			continue
		}
		if a.Key == "" {
			continue
		}
		dst = append(dst, logField{key: prefix + a.Key, val: valueText(v)})
	}
	return dst
}

func valueText(v slog.Value) string {
	switch v.Kind() {
	case slog.KindTime:
		return v.Time().Format(time.RFC3339Nano)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok && err != nil {
			return err.Error()
		}
	}
	return v.String()
}

func logfmtValue(s string) string {
	if s == "" {
		return `""`
	}
	for _, r := range s {
		if r == '=' || r == '"' || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

func levelPriority(l slog.Level) sdjournal.Priority {
	switch {
	case l >= slog.LevelError:
		return sdjournal.PriErr
	case l >= slog.LevelWarn:
		return sdjournal.PriWarning
	case l >= slog.LevelInfo:
		return sdjournal.PriInfo
	default:
		return sdjournal.PriDebug
	}
}
