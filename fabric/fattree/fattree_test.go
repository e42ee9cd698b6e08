package fattree

import (
	"bytes"
	"strings"
	"testing"
)

// Every host reaches every other host along the tables, in at most the
// tree's diameter, and each cable is cabled once at both ends.
func TestFatTree_RoutesReachEveryHost(t *testing.T) {
	for _, s := range []Spec{
		{Radix: 8, Hosts: 8},
		{Radix: 8, Hosts: 6, HostsPerLeaf: 2, Rails: 2},
		{Radix: 8, Hosts: 20, HostsPerLeaf: 4, Pods: 3},
	} {
		f, err := Build(s)
		if err != nil {
			t.Fatal(err)
		}
		lfts := f.LFTs()
		for i, n := range f.Nodes {
			for p, peer := range n.Ports {
				if p > 0 && peer.Node >= 0 && f.Nodes[peer.Node].Ports[peer.Port] != (Peer{i, p}) {
					t.Fatalf("%+v: %d/%d cabled to %+v, which does not cable back", s, i, p, peer)
				}
			}
		}
		for _, src := range f.Nodes {
			if src.Kind != HCA {
				continue
			}
			for di, dst := range f.Nodes {
				if dst.Kind != HCA || dst.GUID == src.GUID {
					continue
				}
				cur, hops := src.Ports[1].Node, 0
				for cur != di {
					out := lfts[cur][dst.LID]
					if out == 255 || out == 0 || hops > 6 {
						t.Fatalf("%+v: %s to %s stuck at node %d (port %d) after %d hops", s, src.Desc, dst.Desc, cur, out, hops)
					}
					cur = f.Nodes[cur].Ports[out].Node
					hops++
				}
			}
		}
	}
	if _, err := Build(Spec{Radix: 8, Hosts: 100}); err == nil {
		t.Error("100 hosts on a two-tier radix-8 tree must be refused")
	}
}

func TestFatTree_Formats(t *testing.T) {
	f, err := Build(Spec{Radix: 4, Hosts: 2})
	if err != nil {
		t.Fatal(err)
	}
	var topo, ports, lfts bytes.Buffer
	if err := f.WriteTopology(&topo); err != nil {
		t.Fatal(err)
	}
	if err := f.WritePorts(&ports); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteLFTs(&lfts); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Switch\t4 \"S-", "Ca\t1 \"H-", "\"gpu0000 mlx5_0\" lid 2 4xNDR"} {
		if !strings.Contains(topo.String(), want) {
			t.Errorf("topology lacks %q:\n%s", want, topo.String())
		}
	}
	if !strings.Contains(ports.String(), "CA     2  1 0xb83fd20300000001 4x NDR - SW     1  1 0xfc6a1c0301000001 ( 'gpu0000 mlx5_0' - 'MF0;ibsw-t1-001:MQM9700/U1' )") {
		t.Errorf("ports report:\n%s", ports.String())
	}
	if !strings.Contains(lfts.String(), "0x0002 001 : (Channel Adapter portguid 0xb83fd20300000001: 'gpu0000 mlx5_0')") {
		t.Errorf("LFTs:\n%s", lfts.String())
	}
}
