// Package devlink reads what the kernel's devlink family (generic netlink,
// over topology/genl) knows about each NIC function: its firmware health
// reporters (DEVLINK_CMD_HEALTH_REPORTER_GET: state, error and recovery
// counts, the last dump's time) and its versions (DEVLINK_CMD_INFO_GET:
// fixed, running and stored, fw.psid and fw.version among them). mlx5
// registers the "fw" and "fw_fatal" reporters per function, "vnic" per
// function on newer kernels and "tx"/"rx" per port, the netdev's queues.
// Both reads are allowed unprivileged (neither command is GENL_ADMIN_PERM
// in net/devlink/netlink_gen.c). Watch subscribes to the family's "config"
// multicast group, on which the kernel announces every health report and
// recovery (devlink_recover_notify in net/devlink/health.c), so a caller
// learns of one without polling.
//
// Parsing is pure and fuzzed; the reads are bounded by topology/genl (size,
// socket timeout), and a read that hangs in the driver by the caller
// (topology/reader's worker).
package devlink

import (
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/topology/genl"
)

// What golang.org/x/sys/unix (v0.49.0) lacks: enum
// devlink_health_reporter_state of include/uapi/linux/devlink.h
// (torvalds/linux).
const (
	reporterStateHealthy = 0
	reporterStateError   = 1
)

// Device is a devlink instance: bus and device name, "pci" and
// "0000:3b:00.0" for a NIC function.
type Device struct {
	Bus  string `json:"bus"`
	Name string `json:"name"`
}

func (d Device) String() string { return d.Bus + "/" + d.Name }

// Reporter is one health reporter's state.
type Reporter struct {
	Device Device `json:"device"`
	// Port is the devlink port index of a per-port reporter (mlx5's tx and
	// rx); HasPort is false for a device's own (fw, fw_fatal, vnic).
	Port    uint32 `json:"port,omitempty"`
	HasPort bool   `json:"hasPort,omitempty"`
	Name    string `json:"name"`
	// Error: the reporter is in error state (not recovered).
	Error        bool   `json:"error"`
	ErrorCount   uint64 `json:"errorCount"`
	RecoverCount uint64 `json:"recoverCount"`
	// LastDump is the wall-clock time of the last dump the reporter took
	// (zero: none).
	LastDump    time.Time `json:"lastDump,omitzero"`
	AutoRecover bool      `json:"autoRecover"`
}

// Info is a devlink instance's INFO_GET answer.
type Info struct {
	Device  Device            `json:"device"`
	Driver  string            `json:"driver,omitempty"`
	Serial  string            `json:"serial,omitempty"`
	Fixed   map[string]string `json:"fixed,omitempty"`
	Running map[string]string `json:"running,omitempty"`
	Stored  map[string]string `json:"stored,omitempty"`
}

// Client asks the devlink family. Not safe for concurrent use.
type Client struct {
	conn   *genl.Conn
	family genl.Family
}

// Dial opens the devlink family with timeout d for each receive:
//   - (c, nil): the kernel has devlink;
//   - an error wrapping genl.ErrNoFamily: it has not (CONFIG_NET_DEVLINK
//     off, or no driver that registers it loaded): nothing to read.
func Dial(d time.Duration) (*Client, error) {
	c, f, err := genl.DialFamily(unix.DEVLINK_GENL_NAME, d)
	if err != nil {
		return nil, err
	}
	return &Client{conn: c, family: f}, nil
}

// Close releases the socket.
func (c *Client) Close() error { return c.conn.Close() }

// Devices lists the devlink instances (DEVLINK_CMD_GET dump); none is an
// empty list.
func (c *Client) Devices() ([]Device, error) {
	msgs, err := c.conn.Dump(c.family.ID, unix.DEVLINK_CMD_GET, unix.DEVLINK_GENL_VERSION, nil)
	if err != nil {
		return nil, fmt.Errorf("devlink devices: %w", err)
	}
	var out []Device
	for _, m := range msgs {
		d, err := parseDevice(m.Attrs)
		if err != nil {
			return nil, fmt.Errorf("devlink devices: %w", err)
		}
		out = append(out, d)
	}
	return out, nil
}

// Reporters lists every health reporter of every instance, ports' too
// (DEVLINK_CMD_HEALTH_REPORTER_GET dump).
func (c *Client) Reporters() ([]Reporter, error) {
	msgs, err := c.conn.Dump(c.family.ID, unix.DEVLINK_CMD_HEALTH_REPORTER_GET, unix.DEVLINK_GENL_VERSION, nil)
	if err != nil {
		return nil, fmt.Errorf("devlink health reporters: %w", err)
	}
	var out []Reporter
	for _, m := range msgs {
		r, err := ParseReporter(m.Attrs)
		if err != nil {
			return nil, fmt.Errorf("devlink health reporters: %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}

// Infos reads every instance's versions (DEVLINK_CMD_INFO_GET dump). An
// instance whose driver fails the query is left out by the kernel's dump.
func (c *Client) Infos() ([]Info, error) {
	msgs, err := c.conn.Dump(c.family.ID, unix.DEVLINK_CMD_INFO_GET, unix.DEVLINK_GENL_VERSION, nil)
	if err != nil {
		return nil, fmt.Errorf("devlink info: %w", err)
	}
	var out []Info
	for _, m := range msgs {
		in, err := ParseInfo(m.Attrs)
		if err != nil {
			return nil, fmt.Errorf("devlink info: %w", err)
		}
		out = append(out, in)
	}
	return out, nil
}

// Info reads one instance's versions.
func (c *Client) Info(d Device) (Info, error) {
	var e genl.Encoder
	e.String(unix.DEVLINK_ATTR_BUS_NAME, d.Bus)
	e.String(unix.DEVLINK_ATTR_DEV_NAME, d.Name)
	msgs, err := c.conn.Do(c.family.ID, unix.DEVLINK_CMD_INFO_GET, unix.DEVLINK_GENL_VERSION, e.Bytes())
	if err != nil {
		return Info{}, fmt.Errorf("devlink info %s: %w", d, err)
	}
	for _, m := range msgs {
		return ParseInfo(m.Attrs)
	}
	return Info{}, fmt.Errorf("devlink info %s: no reply: %w", d, genl.ErrMalformed)
}

func parseDevice(b []byte) (Device, error) {
	attrs, err := genl.ParseAttrs(b)
	if err != nil {
		return Device{}, err
	}
	var d Device
	for _, a := range attrs {
		switch a.Type {
		case unix.DEVLINK_ATTR_BUS_NAME:
			d.Bus = a.String()
		case unix.DEVLINK_ATTR_DEV_NAME:
			d.Name = a.String()
		}
	}
	return d, nil
}

// ParseReporter decodes a HEALTH_REPORTER_GET reply (or its multicast
// notification, DEVLINK_CMD_HEALTH_REPORTER_RECOVER, which carries the
// same attributes).
func ParseReporter(b []byte) (Reporter, error) {
	attrs, err := genl.ParseAttrs(b)
	if err != nil {
		return Reporter{}, err
	}
	var r Reporter
	for _, a := range attrs {
		switch a.Type {
		case unix.DEVLINK_ATTR_BUS_NAME:
			r.Device.Bus = a.String()
		case unix.DEVLINK_ATTR_DEV_NAME:
			r.Device.Name = a.String()
		case unix.DEVLINK_ATTR_PORT_INDEX:
			r.Port, r.HasPort = a.Uint32()
		case unix.DEVLINK_ATTR_HEALTH_REPORTER:
			fields, err := a.Nested()
			if err != nil {
				return Reporter{}, err
			}
			var tsNS uint64
			for _, f := range fields {
				switch f.Type {
				case unix.DEVLINK_ATTR_HEALTH_REPORTER_NAME:
					r.Name = f.String()
				case unix.DEVLINK_ATTR_HEALTH_REPORTER_STATE:
					s, _ := f.Uint8()
					r.Error = s == reporterStateError
				case unix.DEVLINK_ATTR_HEALTH_REPORTER_ERR_COUNT:
					r.ErrorCount, _ = f.Uint64()
				case unix.DEVLINK_ATTR_HEALTH_REPORTER_RECOVER_COUNT:
					r.RecoverCount, _ = f.Uint64()
				case unix.DEVLINK_ATTR_HEALTH_REPORTER_AUTO_RECOVER:
					v, _ := f.Uint8()
					r.AutoRecover = v != 0
				case unix.DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS_NS:
					// Wall-clock nanoseconds (ktime_get_real_ns); the
					// older DUMP_TS is jiffies and means nothing here.
					tsNS, _ = f.Uint64()
				}
			}
			if tsNS > 0 && tsNS < 1<<63 {
				r.LastDump = time.Unix(0, int64(tsNS)).UTC()
			}
		}
	}
	if r.Name == "" {
		return Reporter{}, fmt.Errorf("health reporter without a name: %w", genl.ErrMalformed)
	}
	return r, nil
}

// ParseInfo decodes an INFO_GET reply.
func ParseInfo(b []byte) (Info, error) {
	attrs, err := genl.ParseAttrs(b)
	if err != nil {
		return Info{}, err
	}
	in := Info{}
	for _, a := range attrs {
		var into *map[string]string
		switch a.Type {
		case unix.DEVLINK_ATTR_BUS_NAME:
			in.Device.Bus = a.String()
		case unix.DEVLINK_ATTR_DEV_NAME:
			in.Device.Name = a.String()
		case unix.DEVLINK_ATTR_INFO_DRIVER_NAME:
			in.Driver = a.String()
		case unix.DEVLINK_ATTR_INFO_SERIAL_NUMBER:
			in.Serial = a.String()
		case unix.DEVLINK_ATTR_INFO_VERSION_FIXED:
			into = &in.Fixed
		case unix.DEVLINK_ATTR_INFO_VERSION_RUNNING:
			into = &in.Running
		case unix.DEVLINK_ATTR_INFO_VERSION_STORED:
			into = &in.Stored
		}
		if into == nil {
			continue
		}
		fields, err := a.Nested()
		if err != nil {
			return Info{}, err
		}
		var name, value string
		for _, f := range fields {
			switch f.Type {
			case unix.DEVLINK_ATTR_INFO_VERSION_NAME:
				name = f.String()
			case unix.DEVLINK_ATTR_INFO_VERSION_VALUE:
				value = f.String()
			}
		}
		if name == "" {
			continue
		}
		if *into == nil {
			*into = map[string]string{}
		}
		(*into)[name] = value
	}
	return in, nil
}

// ActivationPending reports whether a flashed firmware waits for a reset:
// the stored fw.version (what the card boots next) is another version
// than the running one (compared as versions: CompareFirmware). A driver
// that reports no stored version says nothing.
func (in Info) ActivationPending() (running, stored string, pending bool) {
	running, stored = in.Running["fw.version"], in.Stored["fw.version"]
	return running, stored, running != "" && stored != "" && CompareFirmware(running, stored) != 0
}

// Rollback reports whether the pending firmware is older than the running
// one: a downgrade flashed on purpose, or the wrong image.
func (in Info) Rollback() bool {
	running, stored, pending := in.ActivationPending()
	return pending && CompareFirmware(stored, running) < 0
}

// Watcher receives the devlink family's notifications of health reports
// and recoveries on a socket of its own.
type Watcher struct {
	conn *genl.Conn
}

// Watch subscribes to the family's "config" multicast group, the kernel's
// announcements of every health report and recovery:
//   - (w, nil): subscribed;
//   - an error wrapping genl.ErrNoFamily: no devlink here;
//   - another error: the group is not offered (a kernel too old) or the
//     subscription failed: poll instead.
func Watch(d time.Duration) (*Watcher, error) {
	c, f, err := genl.DialFamily(unix.DEVLINK_GENL_NAME, d)
	if err != nil {
		return nil, err
	}
	id, ok := f.Groups[unix.DEVLINK_GENL_MCGRP_CONFIG_NAME]
	if !ok {
		c.Close()
		return nil, fmt.Errorf("devlink offers no %q multicast group", unix.DEVLINK_GENL_MCGRP_CONFIG_NAME)
	}
	if err := c.Join(id); err != nil {
		c.Close()
		return nil, err
	}
	return &Watcher{conn: c}, nil
}

// Next waits up to the socket's timeout and returns the reporters named by
// the health notifications received (other config notifications, such as
// a new port, are skipped): genl.ErrTimeout when none came, genl.ErrOverrun
// when some were lost (re-read every reporter).
func (w *Watcher) Next() ([]Reporter, error) {
	msgs, err := w.conn.Receive()
	if err != nil {
		return nil, err
	}
	var out []Reporter
	for _, m := range msgs {
		if m.Cmd != unix.DEVLINK_CMD_HEALTH_REPORTER_RECOVER && m.Cmd != unix.DEVLINK_CMD_HEALTH_REPORTER_GET {
			continue
		}
		if r, err := ParseReporter(m.Attrs); err == nil {
			out = append(out, r)
		}
	}
	return out, nil
}

// Close ends the subscription.
func (w *Watcher) Close() error { return w.conn.Close() }
