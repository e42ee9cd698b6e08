// Package module decodes what a pluggable transceiver (or a cable's plug)
// says about itself through its management memory: identity (vendor, part
// and serial number), module temperature and supply voltage, per-lane laser
// bias, transmitted and received optical power, the latched loss-of-signal,
// loss-of-lock and fault flags, and the module's own alarm and warning
// thresholds. Two memory maps are decoded: SFF-8636 (QSFP, QSFP+, QSFP28;
// thresholds on page 03h) and OIF CMIS (QSFP-DD, OSFP, QSFP112; module
// monitors in the lower page, thresholds on page 02h, lane flags and
// monitors on page 11h) and SFF-8472 (SFP, SFP+, SFP28: identity at A0h,
// diagnostics and thresholds at A2h, internally or externally calibrated).
// What a module monitors is told by its own bytes: a copper cable (SFF-8636
// byte 147, CMIS byte 85, SFF-8472 byte 8) has no lane monitors, and a
// module without diagnostics has no readings, whatever its bytes hold.
// Thresholds outside what their quantity can physically be are not
// trusted (Module.Implausible).
//
// Everything here is a pure function over bytes, fuzzed: Decode takes the
// pages as read (Memory), from the kernel one page at a time
// (ETHTOOL_MSG_MODULE_EEPROM_GET, topology/ethtool) or from a saved dump
// (ParseDump: what `ethtool -m DEV raw on` writes, or its hex form), and
// Excursions says which readings lie past the module's own thresholds. What
// an excursion means for a port (its severity, whether the port is up) is
// the checks' to judge.
package module
