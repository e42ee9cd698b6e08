package sim

import (
	"testing"
	"time"

	"github.com/nichealth/nichealthd/topology/kmsg"
)

// The simulator writes records in the kernel's format into H/dev/kmsg;
// sequence numbers keep growing across processes (a second Host opened
// on the same tree continues them) and a record may leave a gap.
func TestSim_KmsgRecordsReachAReader(t *testing.T) {
	h, err := Build(t.TempDir(), "minimal")
	if err != nil {
		t.Fatal(err)
	}
	src := kmsg.Open(kmsg.Options{Path: h.KmsgPath()})
	defer src.Close()
	sub, dev, err := h.KmsgDict("mlx5_0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.WriteKmsg(kmsg.Record{Level: 3, Message: "mlx5_core: first", Subsystem: sub, Device: dev}); err != nil {
		t.Fatal(err)
	}
	again, err := Open(h.Root)
	if err != nil {
		t.Fatal(err)
	}
	seqs, err := again.WriteKmsg(kmsg.Record{Facility: kmsg.FacilityUser, Message: "second"}, kmsg.Record{Seq: 10, Message: "after a gap"})
	if err != nil || len(seqs) != 2 || seqs[0] != 2 || seqs[1] != 10 {
		t.Fatalf("seqs %v err %v", seqs, err)
	}
	var got []kmsg.Record
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < 3 && time.Now().Before(deadline) {
		got = src.Drain(got, 0)
		time.Sleep(5 * time.Millisecond)
	}
	if len(got) != 3 || got[0].PCIAddress() == "" || got[0].Seq != 1 || got[1].Facility != kmsg.FacilityUser || got[2].Seq != 10 || got[0].TS == 0 {
		t.Fatalf("records %+v", got)
	}
	if l := src.TakeLosses(); len(l) != 1 || l[0].N() != 7 {
		t.Fatalf("losses %+v", l)
	}
}
