// Package transceiver judges each RoCE port's transceiver (optic or active
// cable) against the module's own thresholds, as the last once-a-minute
// pass read it (observe's LinkStory, topology/module's decode): a reading
// past the module's warning threshold is a non-fatal condition naming the
// lane, the value and the threshold; past its alarm threshold, or a loss
// of signal or lock latched on a used lane of an up port, is fatal, with
// the fix naming the module by serial number. Lanes that carry nothing (a
// port that is not up, a lane the module disables or does not have) are
// not judged on their low side: at or below -30 dBm they are not a fault.
// Thresholds the module cannot mean (topology/module's Implausible: out of
// order, or outside what the quantity can physically be) are not judged
// against; they are one degraded "module:thresholds" finding naming the
// module's serial, never a fatal one, so a bad EEPROM cannot drain a node.
//
// Latched flags are clear on read and record what happened since the
// previous read, so a loss of signal counts only when the read before was
// also taken while the port was up: the first read after a link comes up
// consumes the latches of its training.
package transceiver
