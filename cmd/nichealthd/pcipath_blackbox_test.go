package main

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/nichealth/nichealthd/dbusapi"
	"github.com/nichealth/nichealthd/event"
)

// newPCIeViewNode is newViewNode on an OCI H100, whose dual-function RoCE
// cards put two NICs below one switch downstream port.
func newPCIeViewNode(t *testing.T) *viewNode {
	t.Helper()
	return newShapeViewNode(t, "h100-oci")
}

func (v *viewNode) pcieLink(args ...string) string {
	v.t.Helper()
	out, err := exec.Command(simBinary(v.t), append([]string{"pcie-link", "--root", v.h.Root}, args...)...).CombinedOutput()
	if err != nil {
		v.t.Fatalf("nichealth-sim pcie-link %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// pathHopEvent matches the PCIe path event (raise or clear) of hop addr.
func pathHopEvent(addr string, healthy bool) func(e event.Event) bool {
	return func(e event.Event) bool {
		want := event.KindLinkSanity
		if healthy {
			want = event.KindLinkSanityOK
		}
		codes := []string{"pcie-path-width", "pcie-path-width@" + addr}
		if healthy {
			// The clear names its hop only (DESIGN.md difference 13).
			codes = codes[1:]
		}
		return e.Kind == want && e.Metadata["pciHop"] == addr && slices.Equal(e.ErrorCode, codes)
	}
}

// TestBlackBox_PCIePath_DowntrainedSwitchPortNamesBothNICs downtrains, with
// the nichealth-sim binary, the switch downstream port above the
// dual-function card mlx5_0/mlx5_1: one event names both NICs and carries
// both ports as entities, both ports are degraded in D-Bus, nichealthctl
// (ports, port, check), /metrics and STATUS=, and retraining clears it
// everywhere. A port's rate change triggers the sanity pass at once (it
// otherwise runs every minute).
func TestBlackBox_PCIePath_DowntrainedSwitchPortNamesBothNICs(t *testing.T) {
	t.Parallel()
	v := newPCIeViewNode(t)
	v.start()
	v.waitReady()
	skip := v.mark()
	hop := v.pcieLink("mlx5_0", "", "8")
	if hop != "0000:17:00.0" {
		t.Fatalf("pcie-link changed %q, want the switch port above mlx5_0", hop)
	}
	if err := v.h.SetRate("mlx5_2", 1, "50 Gb/sec (2X HDR)"); err != nil {
		t.Fatal(err)
	}
	e := v.waitEventAfter(skip, "the downtrained hop", pathHopEvent(hop, false))
	wantEnts := []event.Entity{{Type: event.EntityNIC, Value: "mlx5_0"}, {Type: event.EntityNICPort, Value: "1"},
		{Type: event.EntityNIC, Value: "mlx5_1"}, {Type: event.EntityNICPort, Value: "1"}}
	if !slices.Equal(e.EntitiesImpacted, wantEnts) || e.IsFatal || e.CheckName != event.EthernetDegradationCheck {
		t.Fatalf("event %+v", e)
	}
	for _, w := range []string{"PCIe switch downstream port 0000:17:00.0 runs its link at 32.0 GT/s x8, both ends support 32.0 GT/s x16", "NICs mlx5_0, mlx5_1 below it"} {
		if !strings.Contains(e.Message, w) {
			t.Fatalf("message %q lacks %q", e.Message, w)
		}
	}
	if e.Metadata["hopRole"] != "switch downstream port" || e.Metadata["nics"] != "mlx5_0,mlx5_1" || !strings.HasPrefix(e.Metadata["gpus"], "GPU0") {
		t.Fatalf("metadata %v", e.Metadata)
	}
	for _, dev := range []string{"mlx5_0", "mlx5_1"} {
		v.agree(verdictWant{dev, 1, "degraded"})
		p := v.waitPort(dev, 1, "the hop finding", func(p dbusapi.PortView) bool { return slices.Contains(p.Sanity, e.Message) })
		if p.Verdict != "degraded" {
			t.Fatalf("%s D-Bus %+v", dev, p)
		}
		if out, _ := v.ctl("port", dev, "1"); !strings.Contains(out, "0000:17:00.0") {
			t.Fatalf("nichealthctl port %s 1 does not name the hop:\n%s", dev, out)
		}
		if page := v.scrape(); !strings.Contains(page, fmt.Sprintf(`nichealth_sanity_findings{device="%s",port="1"} 1`, dev)) {
			t.Fatalf("/metrics lacks the finding on %s", dev)
		}
	}
	if check, _ := v.ctl("check"); !strings.Contains(check, "0000:17:00.0") {
		t.Fatalf("nichealthctl check does not name the hop:\n%s", check)
	}
	if pv := v.waitPort("mlx5_3", 1, "verdict", func(p dbusapi.PortView) bool { return p.Verdict != "" }); pv.Verdict != "healthy" {
		t.Fatalf("mlx5_3 under another switch is %s", pv.Verdict)
	}

	skip = len(v.read())
	v.pcieLink(hop, "", "16")
	if err := v.h.SetRate("mlx5_2", 1, "100 Gb/sec (4X EDR)"); err != nil {
		t.Fatal(err)
	}
	c := v.waitEventAfter(skip, "the hop's clear", pathHopEvent(hop, true))
	if !c.IsHealthy || !slices.Equal(c.EntitiesImpacted, wantEnts) || c.CheckName != e.CheckName {
		t.Fatalf("clear %+v", c)
	}
	for _, dev := range []string{"mlx5_0", "mlx5_1"} {
		v.agree(verdictWant{dev, 1, "healthy"})
	}
	v.stop()
	if n := count(v.read(), pathHopEvent(hop, false)); n != 1 {
		t.Fatalf("the hop was raised %d times", n)
	}
}
