package ethtool

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/nichealth/nichealthd/topology/genl"
	"github.com/nichealth/nichealthd/topology/module"
)

// attr appends a binary attribute as the kernel lays it out: length and
// type (host order, little endian here), the data, padding to 4 bytes.
func (e *encoder) attr(t uint16, data []byte) {
	l := 4 + len(data)
	e.b = append(e.b, byte(l), byte(l>>8), byte(t), byte(t>>8))
	e.b = append(e.b, data...)
	for len(e.b)%4 != 0 {
		e.b = append(e.b, 0)
	}
}

// fakeCage answers page reads from a module's memory (or as an empty
// cage does) and records every read.
type fakeCage struct {
	mem   *module.Memory // nil: empty cage
	empty error          // what an empty cage answers
	reads []string
}

func (c *fakeCage) read(addr, page uint8, offset uint32) ([]byte, error) {
	c.reads = append(c.reads, fmt.Sprintf("%02x:%02x:%d", addr, page, offset))
	if c.mem == nil {
		return nil, c.empty
	}
	switch {
	case addr == 0x51:
		if c.mem.A2 == nil {
			return nil, unix.EIO
		}
		return c.mem.A2, nil
	case offset == 0:
		return c.mem.Lower, nil
	}
	b, ok := c.mem.Upper[page]
	if !ok {
		return nil, unix.EIO
	}
	return b, nil
}

// Issue 40 row 10: a module is asked only for the pages it advertises and
// the diagnostics use; an empty cage for its lower page only, and the
// answer says "no module" whichever errno the driver gives for it.
func TestIssue40_Row10_ReadOnlyWhatTheModuleAdvertises(t *testing.T) {
	cmis := func(flat bool, p1 []byte) *module.Memory {
		lo := make([]byte, module.PageSize)
		lo[0], lo[85] = 0x18, 0x02
		if flat {
			lo[2] = 0x80
		}
		m := &module.Memory{Lower: lo, Upper: map[byte][]byte{0: make([]byte, module.PageSize)}}
		if p1 != nil {
			m.Upper[1] = p1
			for _, p := range []byte{2, 0x10, 0x11} {
				m.Upper[p] = make([]byte, module.PageSize)
			}
		}
		return m
	}
	monitors := make([]byte, module.PageSize)
	monitors[159-128], monitors[160-128] = 0x03, 0x07
	tempOnly := make([]byte, module.PageSize)
	tempOnly[159-128] = 0x01
	sfp := func(ddm byte) *module.Memory {
		lo := make([]byte, module.PageSize)
		lo[0], lo[92] = 0x03, ddm
		return &module.Memory{Lower: lo, Upper: map[byte][]byte{0: make([]byte, module.PageSize)}, A2: make([]byte, module.PageSize)}
	}
	qsfp := func(tech, diag, flat byte) *module.Memory {
		lo := make([]byte, module.PageSize)
		lo[0], lo[2] = 0x11, flat
		up := make([]byte, module.PageSize)
		up[147-128], up[220-128] = tech, diag
		return &module.Memory{Lower: lo, Upper: map[byte][]byte{0: up, 3: make([]byte, module.PageSize)}}
	}
	for _, tc := range []struct {
		name string
		mem  *module.Memory
		want string
	}{
		{"CMIS paged optic", cmis(false, monitors), "50:00:0 50:00:128 50:01:128 50:02:128 50:10:128 50:11:128"},
		{"CMIS with only a temperature monitor", cmis(false, tempOnly), "50:00:0 50:00:128 50:01:128 50:02:128"},
		{"CMIS flat", cmis(true, nil), "50:00:0 50:00:128"},
		{"SFF-8636 optic", qsfp(0x00, 0x0c, 0), "50:00:0 50:00:128 50:03:128"},
		{"SFF-8636 passive DAC", qsfp(0xa0, 0, 0), "50:00:0 50:00:128"},
		{"SFF-8636 flat", qsfp(0x00, 0x0c, 0x04), "50:00:0 50:00:128"},
		{"SFP28 with diagnostics", sfp(0x68), "50:00:0 51:00:0"},
		{"SFP DAC without", sfp(0), "50:00:0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &fakeCage{mem: tc.mem}
			if _, err := ReadModule(c.read); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(c.reads, " "); got != tc.want {
				t.Errorf("reads %s\n want %s", got, tc.want)
			}
		})
	}
	for _, errno := range []error{unix.EIO, unix.EOPNOTSUPP, unix.ENODEV} {
		c := &fakeCage{empty: fmt.Errorf("ethtool netlink eth1: module page 00h offset 0: %w", errno)}
		_, err := ReadModule(c.read)
		if !errors.Is(err, module.ErrNoModule) || !errors.Is(err, errno) || len(c.reads) != 1 {
			t.Errorf("empty cage answering %v: %v after %d reads; want ErrNoModule after 1", errno, err, len(c.reads))
		}
	}
	c := &fakeCage{empty: unix.EPERM}
	if _, err := ReadModule(c.read); errors.Is(err, module.ErrNoModule) || !errors.Is(err, unix.EPERM) {
		t.Errorf("EPERM is not an empty cage: %v", err)
	}
}

// Issue 40 row 12: a short EEPROM page is refused, not padded.
func TestIssue40_Row12_ShortModulePageRefused(t *testing.T) {
	var e encoder
	e.attr(moduleEEPROMData, make([]byte, 127))
	if d, err := ParseModuleReply(e.b, 128); err == nil || !errors.Is(err, genl.ErrMalformed) {
		t.Errorf("127 bytes for 128 asked: %d bytes, %v", len(d), err)
	}
	var ok encoder
	ok.attr(moduleEEPROMData, make([]byte, 128))
	if d, err := ParseModuleReply(ok.b, 128); err != nil || len(d) != 128 {
		t.Errorf("a whole page refused: %v", err)
	}
}
