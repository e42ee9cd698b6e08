// Package aerfile reads the PCIe Advanced Error Reporting statistics the
// kernel keeps for each PCI function (aer_dev_correctable,
// aer_dev_nonfatal, aer_dev_fatal, and on root ports
// aer_rootport_total_err_*): their names and a parser that allocates
// nothing, so a poll's reading is as cheap as the read itself.
package aerfile
