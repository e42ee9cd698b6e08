package daemon

import (
	"fmt"

	"github.com/nichealth/nichealthd/daemon/config"
	"github.com/nichealth/nichealthd/daemon/sink"
	"github.com/nichealth/nichealthd/daemon/sink/connector"
	"github.com/nichealth/nichealthd/systemd/journal"
)

// buildSinks opens every configured destination. The journal is used only
// where journald listens (run by systemd); elsewhere the daemon's own log on
// stderr already carries each event.
func (d *Daemon) buildSinksFor(cfg *config.Config) ([]sink.Sink, error) {
	var out []sink.Sink
	if cfg.JSONLPath != "" {
		s, err := newJSONLSink(cfg.JSONLPath)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if cfg.JournalEnabled {
		s, err := journal.New(d.log)
		if err != nil {
			d.log.Info("journal sink off: journald is not reachable here", "err", err)
		} else {
			out = append(out, s)
		}
	}
	if cfg.ConnectorSocket != "" {
		s, err := connector.New(cfg.ConnectorSocket, connector.Options{
			NodeName: cfg.NodeName, Logger: d.log, Timeout: cfg.ConnectorTimeout,
		})
		if err != nil {
			return nil, fmt.Errorf("platform connector %s: %w", cfg.ConnectorSocket, err)
		}
		out = append(out, s)
	}
	return out, nil
}
