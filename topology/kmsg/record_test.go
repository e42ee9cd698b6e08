package kmsg

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Records as /dev/kmsg hands them out, copied from real hosts and from the
// kernel's documentation (Documentation/ABI/testing/dev-kmsg).
const (
	recFirmwareTimeout = "3,1834,5837461209,-;mlx5_core 0000:56:00.0: wait_func:1189:(pid 72061): ACCESS_REG(0x805) timeout. Will cause a leak of a command resource\n" +
		" SUBSYSTEM=pci\n DEVICE=+pci:0000:56:00.0\n"
	recCallbacks = "4,1835,5837461300,-;mlx5_cmd_out_err: 1243 callbacks suppressed\n"
	recEscaped   = "6,2,12345,-;tab\\x09and newline\\x0aand backslash\\x5cx41 and \\xff\n SUBSYSTEM=net\n DEVICE=n3\n"
	recCont      = "4,99,100,c;watchdog: BUG: soft lockup - CPU#12 stuck for 22s!\n"
	recCaller    = "6,339,5140900,-,caller=T1;NET: Registered protocol family 10\n"
	recUser      = "14,1900,6000000,-;mlx5_core 0000:3b:00.0: Detected insufficient power on the PCIe slot (27W).\n"
)

func TestKmsg_ParseRecordedRecords(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want Record
	}{
		{"command timeout with its dictionary", recFirmwareTimeout, Record{Facility: 0, Level: 3, Seq: 1834, TS: 5837461209 * time.Microsecond, Flags: '-',
			Message:   "mlx5_core 0000:56:00.0: wait_func:1189:(pid 72061): ACCESS_REG(0x805) timeout. Will cause a leak of a command resource",
			Subsystem: "pci", Device: "+pci:0000:56:00.0"}},
		{"rate limiter's callbacks suppressed", recCallbacks, Record{Level: 4, Seq: 1835, TS: 5837461300 * time.Microsecond, Flags: '-',
			Message: "mlx5_cmd_out_err: 1243 callbacks suppressed"}},
		{"escapes decoded, netdev dictionary", recEscaped, Record{Level: 6, Seq: 2, TS: 12345 * time.Microsecond, Flags: '-',
			Message: "tab\tand newline\nand backslash\\x41 and \xff", Subsystem: "net", Device: "n3"}},
		{"continued line (kernels before 4.9)", recCont, Record{Level: 4, Seq: 99, TS: 100 * time.Microsecond, Flags: 'c',
			Message: "watchdog: BUG: soft lockup - CPU#12 stuck for 22s!"}},
		{"caller id after the flags", recCaller, Record{Level: 6, Seq: 339, TS: 5140900 * time.Microsecond, Flags: '-',
			Message: "NET: Registered protocol family 10"}},
		{"written from user space: facility user", recUser, Record{Facility: FacilityUser, Level: 6, Seq: 1900, TS: 6 * time.Second, Flags: '-',
			Message: "mlx5_core 0000:3b:00.0: Detected insufficient power on the PCIe slot (27W)."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("Parse:\n got %+v\nwant %+v", got, tc.want)
			}
			if back, err := Parse(Format(got)); err != nil || back != got {
				t.Fatalf("Format/Parse round trip: %+v, %v", back, err)
			}
		})
	}
	r, _ := Parse([]byte(recFirmwareTimeout))
	if r.PCIAddress() != "0000:56:00.0" {
		t.Errorf("PCIAddress %q", r.PCIAddress())
	}
	if r, _ := Parse([]byte(recEscaped)); r.PCIAddress() != "" {
		t.Errorf("a netdev dictionary names no PCI address, got %q", r.PCIAddress())
	}
}

func TestKmsg_ParseRefusesWhatIsNotARecord(t *testing.T) {
	for _, in := range []string{
		"", "no header at all\n", "6,1,2;three fields\n", "x,1,2,-;bad prio\n", "6,-1,2,-;bad seq\n",
		"6,1,99999999999999999999,-;ts overflows\n", "6,1,2,-;msg\nDEVICE=+pci:0000:3b:00.0\n",
		" SUBSYSTEM=pci\n", "6,1\n,2,-;newline in the header\n",
	} {
		if r, err := Parse([]byte(in)); !errors.Is(err, ErrMalformed) {
			t.Errorf("Parse(%q) = %+v, %v; want ErrMalformed", in, r, err)
		}
	}
}

func TestKmsg_SplitSeveralPerReadAndAcrossReads(t *testing.T) {
	stream := recFirmwareTimeout + recCallbacks + recEscaped + recCont + recCaller
	want := []string{recFirmwareTimeout, recCallbacks, recEscaped, recCont, recCaller}
	// Every cut of the stream into two reads yields the same records, but
	// for a cut exactly between a record and its dictionary (the one
	// ambiguity the Splitter documents).
	for cut := 0; cut <= len(stream); cut++ {
		var got []string
		var sp Splitter
		emit := func(b []byte) { got = append(got, string(b)) }
		sp.Feed([]byte(stream[:cut]), emit)
		sp.Feed([]byte(stream[cut:]), emit)
		ambiguous := cut > 0 && cut < len(stream) && stream[cut-1] == '\n' && stream[cut] == ' '
		if ambiguous {
			continue
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("cut at %d: got %q", cut, got)
		}
	}
}

func TestKmsg_SplitDropsOversizedAndResynchronises(t *testing.T) {
	var sp Splitter
	sp.Max = 64
	var got []string
	emit := func(b []byte) { got = append(got, string(b)) }
	long := "6,1,1,-;" + strings.Repeat("x", 100) + "\n SUBSYSTEM=pci\n"
	sp.Feed([]byte(long[:30]), emit)
	sp.Feed([]byte(long[30:80]), emit)
	sp.Feed([]byte(long[80:]+"6,2,2,-;next\n"), emit)
	sp.Feed([]byte(strings.Repeat("y", 200)), emit)
	sp.Feed([]byte("\n6,3,3,-;after\n"), emit)
	if strings.Join(got, "|") != "6,2,2,-;next\n|6,3,3,-;after\n" || sp.Oversized != 2 {
		t.Fatalf("got %q, oversized %d", got, sp.Oversized)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{recFirmwareTimeout, recCallbacks, recEscaped, recCont, recCaller, recUser, "6,1,2,-;\\x\\x4\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Parse(b)
		if err != nil {
			return
		}
		back, err := Parse(Format(r))
		if err != nil {
			t.Fatalf("Format of a parsed record does not parse: %v", err)
		}
		// Facility and level are 8 bits of priority in the kernel; a
		// larger facility number is carried as is.
		if back.Message != r.Message || back.Seq != r.Seq || back.TS != r.TS || back.Device != r.Device || back.Subsystem != r.Subsystem {
			t.Fatalf("round trip changed the record:\n%+v\n%+v", r, back)
		}
	})
}

func FuzzSplit(f *testing.F) {
	f.Add([]byte(recFirmwareTimeout+recCallbacks), 10)
	f.Add([]byte(recEscaped+recCont), 0)
	f.Fuzz(func(t *testing.T, b []byte, cut int) {
		var sp Splitter
		sp.Max = 128
		total := 0
		emit := func(rec []byte) {
			if len(rec) > 128 || len(rec) == 0 {
				t.Fatalf("emitted %d bytes", len(rec))
			}
			total += len(rec)
		}
		if cut < 0 || cut > len(b) {
			cut = len(b) / 2
		}
		sp.Feed(b[:cut], emit)
		sp.Feed(b[cut:], emit)
		if total > len(b) {
			t.Fatalf("emitted %d bytes of %d", total, len(b))
		}
	})
}
