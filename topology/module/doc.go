// Package module decodes what a pluggable transceiver (or a cable's plug)
// says about itself through its management memory: identity (vendor, part
// and serial number), module temperature and supply voltage, per-lane laser
// bias, transmitted and received optical power, the latched loss-of-signal,
// loss-of-lock and fault flags, and the module's own alarm and warning
// thresholds. Two memory maps are decoded: SFF-8636 (QSFP, QSFP+, QSFP28;
// thresholds on page 03h) and OIF CMIS (QSFP-DD, OSFP, QSFP112; module
// monitors in the lower page, thresholds on page 02h, lane flags and
// monitors on page 11h). SFP modules (SFF-8472) are identified only.
//
// Everything here is a pure function over bytes, fuzzed: Decode takes the
// pages as read (Memory), from the kernel one page at a time
// (ETHTOOL_MSG_MODULE_EEPROM_GET, topology/ethtool) or from a saved dump
// (ParseDump: what `ethtool -m DEV raw on` writes, or its hex form), and
// Excursions says which readings lie past the module's own thresholds. What
// an excursion means for a port (its severity, whether the port is up) is
// the checks' to judge.
package module
