package health

// ModuleReading is one port's transceiver as read, in base units.
type ModuleReading struct {
	Device       string       `json:"device"`
	Port         int          `json:"port"`
	NetDev       string       `json:"netDev"`
	Type         string       `json:"type"`
	Vendor       string       `json:"vendor"`
	PartNumber   string       `json:"partNumber"`
	Serial       string       `json:"serial"`
	TemperatureC *float64     `json:"temperatureC,omitempty"`
	VoltageV     *float64     `json:"voltageV,omitempty"`
	Lanes        []ModuleLane `json:"lanes,omitempty"`
}

// ModuleLane is one lane's monitors (nil: not monitored).
type ModuleLane struct {
	Lane     int      `json:"lane"`
	TxBiasA  *float64 `json:"txBiasA,omitempty"`
	TxPowerW *float64 `json:"txPowerW,omitempty"`
	RxPowerW *float64 `json:"rxPowerW,omitempty"`
	Unused   bool     `json:"unused,omitempty"`
}

// DevlinkReading is one health reporter of a NIC function, or (Reporter
// "") the function's firmware versions.
type DevlinkReading struct {
	PCI          string `json:"pci"`
	Reporter     string `json:"reporter,omitempty"`
	Error        bool   `json:"error,omitempty"`
	ErrorCount   uint64 `json:"errorCount,omitempty"`
	RecoverCount uint64 `json:"recoverCount,omitempty"`
	Running      string `json:"running,omitempty"`
	Stored       string `json:"stored,omitempty"`
}

// KernelLogTotals are the kernel-log reader's and check's totals since
// start: how much was read, dropped or lost, and matched per pattern and
// device.
type KernelLogTotals struct {
	// Reading: the kernel log is open; Err says why not.
	Reading bool   `json:"reading"`
	Err     string `json:"err,omitempty"`
	Records uint64 `json:"records"` // read
	// Sequence is the kernel's sequence number of the newest record read.
	Sequence uint64 `json:"sequence"`
	Judged   uint64 `json:"judged"`
	// Dropped records exceeded the record size bound or were not in the
	// kernel's format; Lost ones the kernel's ring overwrote before they
	// were read.
	Dropped       uint64 `json:"dropped"`
	Lost          uint64 `json:"lost"`
	OtherFacility uint64 `json:"otherFacility"`
	Unmonitored   uint64 `json:"unmonitored"`
	Unattributed  uint64 `json:"unattributed"`
	// Overflow are matched records past the check's bounds on conditions
	// (counted on its overflow condition); OverBudget records dropped
	// because more waited than a cycle's batch; Carried the records
	// waiting for the next cycle's judging budget.
	Overflow   uint64           `json:"overflow,omitempty"`
	OverBudget uint64           `json:"overBudget,omitempty"`
	Carried    int              `json:"carried,omitempty"`
	Matches    []KernelLogMatch `json:"matches,omitempty"`
}

// KernelLogMatch is one pattern's matches on one device (the NIC, else
// the PCI address, else "none").
type KernelLogMatch struct {
	Pattern string `json:"pattern"`
	Device  string `json:"device"`
	Count   uint64 `json:"count"`
}

// NICInfo is one NIC function of the PCI inventory.
type NICInfo struct {
	PCI     string `json:"pci"`
	Device  string `json:"device,omitempty"` // its RDMA device, "" without one
	Role    string `json:"role,omitempty"`
	HCAType string `json:"hcaType,omitempty"`
	FWVer   string `json:"fwVer,omitempty"`
	BoardID string `json:"boardID,omitempty"`
	Serial  string `json:"serial,omitempty"`
	Driver  string `json:"driver,omitempty"`
	// State is ok, unbound, other-driver or no-rdma; Monitored says
	// whether its RDMA device is monitored.
	State     string `json:"state"`
	Monitored bool   `json:"monitored"`
}

// AERTotal is one PCI function's total of one AER class.
type AERTotal struct {
	PCI      string `json:"pci"`
	Severity string `json:"severity"` // correctable, nonfatal, fatal
	Total    uint64 `json:"total"`
	// RootPort: a root port's aer_rootport_total_err_* (what it received
	// from every device below it), not the function's own counters.
	RootPort bool `json:"rootPort,omitempty"`
}
