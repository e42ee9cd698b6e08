package farend

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nichealth/nichealthd/checks/counters"
	"github.com/nichealth/nichealthd/config/countertable"
	"github.com/nichealth/nichealthd/event"
	"github.com/nichealth/nichealthd/event/condition"
	"github.com/nichealth/nichealthd/mad/farend"
	"github.com/nichealth/nichealthd/mad/wire"
)

// UnstableRow is the row name of the peer-unstable finding (error code
// peer:unstable): latched, acknowledged and restated as the counter rows
// are.
const UnstableRow = "unstable"

// head is the slides' words for a far-end counter, which the Nagios line
// repeats: "Direct-attached ibsw-leaf1 port 17: [SymbolErrorCounter == 55]".
func head(peer farend.Peer, field string, value uint64) string {
	return fmt.Sprintf("Direct-attached %s port %d: [%s == %d]", peer.Name, peer.Port, field, value)
}

// judged is a row's verdict on one reading, for its event.
type judged struct {
	// full says a full window was judged (velocity and congestion rows).
	full    bool
	delta   uint64
	elapsed time.Duration
	rate    float64
	unit    string
	breach  bool
}

// breach is a row's condition. Its message names the rule and the window
// it was judged over, as a local counter's does, so peer:symbol_error
// (per second, between two reads) and peer:symbol_error_fatal (per hour,
// over an hour of reads) never read alike.
func (c *Check) breach(p *farend.PeerPort, r *countertable.FarEndRow, cur, prev uint64, j judged) event.Spec {
	d := &r.Def
	if d.ThresholdType == countertable.TypeVelocity {
		// What the window judged started from: the read at its start,
		// not necessarily the read before (a window not yet full at that
		// one is judged at the next).
		prev = cur - j.delta
	}
	md := map[string]string{
		"counter": d.Name, "field": r.Field, "value": strconv.FormatUint(cur, 10), "previousValue": strconv.FormatUint(prev, 10),
		"delta": strconv.FormatUint(j.delta, 10), "rate": strconv.FormatFloat(j.rate, 'f', 2, 64), "unit": j.unit,
		"threshold": strconv.FormatFloat(d.Threshold, 'g', -1, 64), "thresholdType": d.ThresholdType,
		"elapsed": j.elapsed.Round(time.Millisecond).String(), "description": d.Description,
		"rule": counters.RuleText(d),
	}
	var words string
	switch d.ThresholdType {
	case countertable.TypeVelocity:
		md["window"] = d.Window().String()
		words = fmt.Sprintf("rule %s, judged over %s of reads: delta=%d, rate=%.2f%s", counters.ThresholdText(d),
			j.elapsed.Round(time.Second), j.delta, j.rate, counters.UnitSuffix(d.VelocityUnit))
	case countertable.TypeCongestion:
		words = fmt.Sprintf("rule > %s%% of the link lost to backpressure, judged over %s: %.1f%%",
			strconv.FormatFloat(d.Threshold, 'g', -1, 64), j.elapsed.Round(time.Second), j.rate)
	default:
		words = fmt.Sprintf("rule %s: delta=%d between two reads %s apart", counters.ThresholdText(d), j.delta, j.elapsed.Round(time.Second))
	}
	return event.Spec{
		Kind: event.KindPeerBreach, CheckName: CheckName,
		// The classic check's own words (the slides' "Remote errors
		// check"), which the Nagios line repeats, then the rule's.
		Message:   head(p.Peer, r.Field, cur) + " " + counters.RuleText(d) + " (" + words + ")",
		ErrorCode: []string{r.Code()}, Device: p.Device, Port: p.Port,
		Metadata:  peerMeta(p.Peer, md),
		Condition: condition.OfCounter(p.Device, p.Port, r.Code()),
	}
}

// saturated is a field's visibility-lost condition: the fix is the fabric
// team's (the switch's counters are never cleared from here), or the
// operator's acknowledgement.
func saturated(p *farend.PeerPort, field string, value uint64, f wire.Field) event.Spec {
	code := SaturatedCode(field)
	return event.Spec{
		Kind: event.KindPeerSaturated, CheckName: CheckName,
		Message: fmt.Sprintf("%s saturated (%d-bit field): visibility lost, new errors on this cable are not counted at the switch; "+
			"ask the fabric team to run perfquery -R %d %d (LID %d port %d: switch %s port %d) to clear that switch port's counters, "+
			"or acknowledge with nichealthctl ack %s %d %s",
			head(p.Peer, field, value), f.Bits, p.Peer.LID, p.Peer.Port, p.Peer.LID, p.Peer.Port, p.Peer.Name, p.Peer.Port, p.Device, p.Port, code),
		ErrorCode: []string{code}, Device: p.Device, Port: p.Port,
		Metadata: peerMeta(p.Peer, map[string]string{"field": field, "value": strconv.FormatUint(value, 10),
			"bits": strconv.FormatUint(uint64(f.Bits), 10), "fix": fmt.Sprintf("perfquery -R %d %d", p.Peer.LID, p.Peer.Port)}),
		Condition: condition.OfCounter(p.Device, p.Port, code),
	}
}

// witness says that a far-end increment was a local episode seen from the
// switch: a healthy event of the local port's far-end code, which raises
// nothing and clears nothing (no condition was raised), carrying the
// episode in its metadata. The local episode's own events were sent before
// the switch could be read (its port is unreachable while the link is
// down), so this is where the one cable event is told whole.
func witness(p *farend.PeerPort, r *countertable.FarEndRow, cur, prev uint64, ep Episode) event.Spec {
	d := &r.Def
	what := "link-down"
	span := "still lasting"
	if !ep.To.IsZero() {
		span = "down " + ep.Duration().Round(time.Millisecond).String()
	}
	switch ep.Kind {
	case EpisodeDeviceGone:
		what = "RDMA device absence (driver reload or lost function)"
	case EpisodeCounted:
		// Only the two counter ticks bound it: no length is claimed.
		what = "link-down or retrain counted by its own link_downed or link_error_recovery"
		span = "shorter than a state poll, counted by " + ep.To.UTC().Format(time.RFC3339)
	}
	md := map[string]string{
		"counter": d.Name, "field": r.Field, "value": strconv.FormatUint(cur, 10), "previousValue": strconv.FormatUint(prev, 10),
		"delta": strconv.FormatUint(cur-prev, 10), "reason": "local-episode",
		"episodeKind": ep.Kind, "episodeFrom": ep.From.UTC().Format(time.RFC3339Nano),
	}
	md[witnessKey(r.Field)] = "+" + strconv.FormatUint(cur-prev, 10)
	if !ep.To.IsZero() {
		md["episodeTo"] = ep.To.UTC().Format(time.RFC3339Nano)
		if ep.Kind != EpisodeCounted {
			md["episodeDuration"] = ep.Duration().Round(time.Millisecond).String()
		}
	}
	return event.Spec{
		Kind: event.KindPeerRecovered, CheckName: CheckName, IsHealthy: true,
		Message: fmt.Sprintf("%s is the local %s of %s port %d (from %s, %s) seen from the switch: one cable event, no far-end condition",
			head(p.Peer, r.Field, cur), what, p.Device, p.Port, ep.From.UTC().Format(time.RFC3339), span),
		ErrorCode: []string{r.Code()}, Device: p.Device, Port: p.Port,
		Metadata:  peerMeta(p.Peer, md),
		Condition: condition.OfCounter(p.Device, p.Port, r.Code()),
	}
}

// witnessKey is the metadata key of a witnessing field: peerLinkDowned,
// peerLinkErrorRecovery.
func witnessKey(field string) string {
	return "peer" + strings.TrimSuffix(field, "Counter")
}

// unstable is the peer-unstable finding: the port's far end changed too
// often to be a cable that stays put.
func unstable(p *farend.PeerPort, seen []PeerSeen, within time.Duration) event.Spec {
	code := countertable.PeerCode(UnstableRow)
	list := make([]string, 0, len(seen))
	for _, s := range seen {
		if e := fmt.Sprintf("%s port %d (%s)", s.GUID, s.Port, s.Name); !slices.Contains(list, e) {
			list = append(list, e)
		}
	}
	return event.Spec{
		Kind: event.KindPeerBreach, CheckName: CheckName,
		Message: fmt.Sprintf("Direct-attached %s port %d: peer unstable - %d peer changes within %s, across %s; a loose or moved cable, "+
			"or a fabric renumbering it; each new peer's counters start from a new baseline, so nothing about this cable is judged "+
			"while it lasts; it clears once the same peer has stayed %s",
			p.Peer.Name, p.Peer.Port, len(seen)-1, within, strings.Join(list, ", "), StableAfter),
		ErrorCode: []string{code}, Device: p.Device, Port: p.Port,
		Metadata: peerMeta(p.Peer, map[string]string{"counter": UnstableRow, "peersSeen": strings.Join(list, ", "),
			"peers": strconv.Itoa(len(seen)), "window": within.String()}),
		Condition: condition.OfCounter(p.Device, p.Port, code),
	}
}

// peerMeta adds the peer to md: who is at the far end.
func peerMeta(peer farend.Peer, md map[string]string) map[string]string {
	md["peerGUID"] = peer.NodeGUID
	md["peerPort"] = strconv.Itoa(peer.Port)
	md["peerName"] = peer.Name
	md["peerLID"] = strconv.Itoa(peer.LID)
	if peer.Description != "" {
		md["peerDescription"] = peer.Description
	}
	return md
}

func (c *Check) recovered(dev string, port int, pm *PortMemory, row, reason, why string) event.Spec {
	since := pm.Latched[row]
	code := countertable.PeerCode(row)
	return event.Spec{
		Kind: event.KindPeerRecovered, CheckName: CheckName, IsHealthy: true,
		Message: fmt.Sprintf("Port %s port %d: the far end (%s port %d) no longer reports %s: %s", dev, port,
			nameOr(pm), pm.PeerPort, row, why),
		ErrorCode: []string{code}, Device: dev, Port: port,
		Metadata: map[string]string{"counter": row, "reason": reason, "why": why, "breachedSince": since.UTC().Format(time.RFC3339),
			"peerGUID": pm.PeerGUID, "peerPort": strconv.Itoa(pm.PeerPort), "peerName": pm.PeerName},
		Condition: condition.OfCounter(dev, port, code),
	}
}

func (c *Check) unsaturated(dev string, port int, pm *PortMemory, field, why string) event.Spec {
	code := SaturatedCode(field)
	return event.Spec{
		Kind: event.KindPeerUnsaturated, CheckName: CheckName, IsHealthy: true,
		Message:   fmt.Sprintf("Port %s port %d: the far end's %s (%s port %d) counts again: %s", dev, port, field, nameOr(pm), pm.PeerPort, why),
		ErrorCode: []string{code}, Device: dev, Port: port,
		Metadata: map[string]string{"field": field, "why": why, "saturatedSince": pm.Saturated[field].UTC().Format(time.RFC3339),
			"peerGUID": pm.PeerGUID, "peerPort": strconv.Itoa(pm.PeerPort), "peerName": pm.PeerName},
		Condition: condition.OfCounter(dev, port, code),
	}
}

func nameOr(pm *PortMemory) string {
	if pm.PeerName != "" {
		return pm.PeerName
	}
	return pm.PeerGUID
}
