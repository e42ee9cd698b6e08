package devlink

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/internal/component"
	"github.com/nichealth/nichealthd/topology/genl"
)

// reporterReply builds a HEALTH_REPORTER_GET reply the way
// devlink_nl_health_reporter_fill (net/devlink/health.c) lays it out.
func reporterReply(dev string, port int, name string, state uint8, errs, recovers uint64, dumpNS uint64) []byte {
	var e genl.Encoder
	e.String(unix.DEVLINK_ATTR_BUS_NAME, "pci")
	e.String(unix.DEVLINK_ATTR_DEV_NAME, dev)
	if port >= 0 {
		e.Uint32(unix.DEVLINK_ATTR_PORT_INDEX, uint32(port))
	}
	e.Nested(unix.DEVLINK_ATTR_HEALTH_REPORTER, func(r *genl.Encoder) {
		r.String(unix.DEVLINK_ATTR_HEALTH_REPORTER_NAME, name)
		r.Uint8(unix.DEVLINK_ATTR_HEALTH_REPORTER_STATE, state)
		u64(r, unix.DEVLINK_ATTR_HEALTH_REPORTER_ERR_COUNT, errs)
		u64(r, unix.DEVLINK_ATTR_HEALTH_REPORTER_RECOVER_COUNT, recovers)
		r.Uint8(unix.DEVLINK_ATTR_HEALTH_REPORTER_AUTO_RECOVER, 1)
		if dumpNS != 0 {
			u64(r, unix.DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS, 4295000000)
			u64(r, unix.DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS_NS, dumpNS)
		}
	})
	return e.Bytes()
}

func u64(e *genl.Encoder, t uint16, v uint64) { e.Uint64(t, v) }

func TestDevlink_ReporterReplies(t *testing.T) {
	dumped := time.Date(2026, 11, 20, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name string
		in   []byte
		want Reporter
	}{
		{"fw_fatal in error, one dump", reporterReply("0000:3b:00.0", -1, "fw_fatal", 1, 1, 0, uint64(dumped.UnixNano())),
			Reporter{Device: Device{"pci", "0000:3b:00.0"}, Name: "fw_fatal", Error: true, ErrorCount: 1, LastDump: dumped, AutoRecover: true}},
		{"fw healthy after two recoveries", reporterReply("0000:3b:00.0", -1, "fw", 0, 2, 2, 0),
			Reporter{Device: Device{"pci", "0000:3b:00.0"}, Name: "fw", ErrorCount: 2, RecoverCount: 2, AutoRecover: true}},
		{"a port's tx reporter", reporterReply("0000:3b:00.1", 65535, "tx", 0, 3, 3, 0),
			Reporter{Device: Device{"pci", "0000:3b:00.1"}, Port: 65535, HasPort: true, Name: "tx", ErrorCount: 3, RecoverCount: 3, AutoRecover: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseReporter(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if _, err := ParseReporter(nil); !errors.Is(err, genl.ErrMalformed) {
		t.Errorf("a reporter without a name: %v", err)
	}
}

func infoReply(running, stored string) []byte {
	var e genl.Encoder
	e.String(unix.DEVLINK_ATTR_BUS_NAME, "pci")
	e.String(unix.DEVLINK_ATTR_DEV_NAME, "0000:3b:00.0")
	e.String(unix.DEVLINK_ATTR_INFO_DRIVER_NAME, "mlx5_core")
	e.String(unix.DEVLINK_ATTR_INFO_SERIAL_NUMBER, "MT2231X12345")
	ver := func(kind uint16, name, value string) {
		e.Nested(kind, func(v *genl.Encoder) {
			v.String(unix.DEVLINK_ATTR_INFO_VERSION_NAME, name)
			v.String(unix.DEVLINK_ATTR_INFO_VERSION_VALUE, value)
		})
	}
	ver(unix.DEVLINK_ATTR_INFO_VERSION_FIXED, "fw.psid", "MT_0000000838")
	ver(unix.DEVLINK_ATTR_INFO_VERSION_RUNNING, "fw.version", running)
	ver(unix.DEVLINK_ATTR_INFO_VERSION_RUNNING, "fw", running)
	if stored != "" {
		ver(unix.DEVLINK_ATTR_INFO_VERSION_STORED, "fw.version", stored)
		ver(unix.DEVLINK_ATTR_INFO_VERSION_STORED, "fw", stored)
	}
	return e.Bytes()
}

// What mlx5_devlink_info_get reports: fixed fw.psid, running and stored
// fw.version. A flashed but not yet activated firmware is a stored version
// that differs from the running one.
func TestDevlink_InfoAndActivationPending(t *testing.T) {
	for _, tc := range []struct {
		name            string
		running, stored string
		pending         bool
	}{
		{"running is stored", "28.39.1002", "28.39.1002", false},
		{"flashed, not activated", "28.39.1002", "28.40.1000", true},
		{"driver without stored versions", "28.39.1002", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := ParseInfo(infoReply(tc.running, tc.stored))
			if err != nil {
				t.Fatal(err)
			}
			if in.Device != (Device{"pci", "0000:3b:00.0"}) || in.Driver != "mlx5_core" || in.Serial != "MT2231X12345" || in.Fixed["fw.psid"] != "MT_0000000838" {
				t.Errorf("info %+v", in)
			}
			r, s, pending := in.ActivationPending()
			if pending != tc.pending || r != tc.running || s != tc.stored {
				t.Errorf("ActivationPending = %q %q %v; want %v", r, s, pending, tc.pending)
			}
		})
	}
}

// inNewNetns runs fn on a thread moved into a fresh network namespace
// (no devlink instance is in it).
func inNewNetns(t *testing.T, fn func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		component.Missing(t, "creating a network namespace needs root (run the tests as root)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		component.Missing(t, "ip not installed (apt-get install iproute2)")
	}
	ns := fmt.Sprintf("nhdl-%d", os.Getpid())
	exec.Command("ip", "netns", "del", ns).Run()
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		target, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			done <- err
			return
		}
		defer unix.Close(target)
		if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
			done <- err
			return
		}
		fn()
		// The thread stays locked and ends with the goroutine: it is in
		// another namespace.
		done <- nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The real kernel, in a namespace with no devlink instance: a kernel
// without devlink says so (ErrNoFamily) for every call, one with it lists
// nothing; neither is a fault, and a subscription either fails the same
// way or waits quietly to its timeout.
func TestLinkStory_DevlinkFamilyWithNoDevices(t *testing.T) {
	inNewNetns(t, func() {
		c, err := Dial(2 * time.Second)
		if errors.Is(err, genl.ErrNoFamily) {
			if _, err := Watch(time.Second); !errors.Is(err, genl.ErrNoFamily) {
				t.Errorf("watch without devlink: %v, want ErrNoFamily", err)
			}
			t.Logf("this kernel has no devlink family: %v", err)
			return
		}
		if err != nil {
			t.Fatalf("dial devlink: %v", err)
		}
		defer c.Close()
		devs, err := c.Devices()
		if err != nil || len(devs) != 0 {
			t.Errorf("devices %v, %v; want none", devs, err)
		}
		reps, err := c.Reporters()
		if err != nil || len(reps) != 0 {
			t.Errorf("reporters %v, %v; want none", reps, err)
		}
		infos, err := c.Infos()
		if err != nil || len(infos) != 0 {
			t.Errorf("infos %v, %v; want none", infos, err)
		}
		if _, err := c.Info(Device{"pci", "0000:3b:00.0"}); !errors.Is(err, unix.ENODEV) {
			t.Errorf("info of an absent device: %v, want ENODEV", err)
		}
		w, err := Watch(20 * time.Millisecond)
		if err != nil {
			t.Fatalf("watch: %v", err)
		}
		defer w.Close()
		if r, err := w.Next(); !errors.Is(err, genl.ErrTimeout) {
			t.Errorf("a quiet namespace's notifications: %v, %v; want a timeout", r, err)
		}
	})
}

func FuzzParseDevlink(f *testing.F) {
	f.Add(reporterReply("0000:3b:00.0", 1, "fw_fatal", 1, 1, 0, 1))
	f.Add(infoReply("28.39.1002", "28.40.1000"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := ParseReporter(b); err == nil && r.Name == "" {
			t.Fatal("a reporter without a name parsed")
		}
		if in, err := ParseInfo(b); err == nil {
			in.ActivationPending()
		}
	})
}
