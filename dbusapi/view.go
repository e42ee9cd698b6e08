package dbusapi

import "errors"

// PortView is what the daemon knows about one monitored port, as the API
// shows it. The backend builds a fresh one on every call; the server keeps
// its own copy to compute change signals.
type PortView struct {
	Device     string `json:"device"`
	Port       int32  `json:"port"`
	LinkLayer  string `json:"linkLayer"`
	Role       string `json:"role"`
	RoleReason string `json:"roleReason"`
	NetDev     string `json:"netDev"`
	PCIAddress string `json:"pciAddress"`
	NUMANode   int32  `json:"numaNode"`
	// NodeGUID and PortGUID identify the port in the fabric as
	// ibnetdiscover prints them ("0xb83fd20300a0b010"; "" when unknown).
	NodeGUID string `json:"nodeGUID"`
	PortGUID string `json:"portGUID"`
	// GPUs are the GPUs behind the NIC (PIX/PXB), e.g. "GPU3
	// (0000:5d:00.0)", or "no GPU affinity": what to drain for this port.
	GPUs      string `json:"gpus"`
	Rate      string `json:"rate"`
	State     string `json:"state"`
	PhysState string `json:"physState"`
	// Up: the port carries traffic (ACTIVE and LinkUp, the daemon's one
	// definition); RateGbps is Rate in Gb/s (0 when unknown). Clients
	// judge by these, never by parsing State or Rate.
	Up       bool    `json:"up"`
	RateGbps float64 `json:"rateGbps"`
	Healthy  bool    `json:"healthy"`
	Fatal    bool    `json:"fatal"`
	// Verdict is "healthy", "degraded" or "fatal": the worst condition on
	// the port, its NIC or its card (checks/health).
	Verdict    string          `json:"verdict"`
	Conditions []ConditionView `json:"conditions"`
	Message    string          `json:"message"`
	// LastChangeUSec is the realtime clock, in µs since the epoch, of the
	// port's last healthy/unhealthy crossing (0 = none seen).
	LastChangeUSec uint64        `json:"lastChangeUSec"`
	Counters       []CounterView `json:"counters"`
	// Sanity holds link sanity findings (PCIe width/speed, SM LID, character
	// devices); empty when everything is as expected.
	Sanity []string `json:"sanity"`
	// FirmwareVersion and BoardID are the NIC's fw_ver and board_id (PSID).
	FirmwareVersion string `json:"firmwareVersion"`
	BoardID         string `json:"boardID"`
	// PeerGUID, PeerPort and PeerName are the far end of an InfiniBand
	// port's cable ("", 0 when not known): the peer's node GUID as
	// ibnetdiscover prints it, its port, and its node-name map name or
	// NodeDescription.
	PeerGUID string `json:"peerGUID"`
	PeerPort uint32 `json:"peerPort"`
	PeerName string `json:"peerName"`
	// PeerCounters are the peer port's PortCounters fields by PMA name,
	// as last read (empty when not read).
	PeerCounters map[string]uint64 `json:"peerCounters,omitempty"`
	// PeerReadUSec is the realtime µs of the far end's last good counter
	// read (0: never read), PeerReadErrors the failed attempts to find
	// or read it since the daemon started, and PeerReadError why the
	// last attempt failed ("" when it did not). A far end that stops
	// answering keeps PeerGUID, PeerName and PeerCounters as last read:
	// stale, aged by PeerReadUSec, never vanished (the series on
	// /metrics stay the same way).
	PeerReadUSec   uint64 `json:"peerReadUSec,omitempty"`
	PeerReadErrors uint64 `json:"peerReadErrors,omitempty"`
	PeerReadError  string `json:"peerReadError,omitempty"`
	// LinkDownReason is why a RoCE port's link is down, as its driver said
	// ("" while up or when the driver said nothing).
	LinkDownReason string `json:"linkDownReason"`
	// RoCEClass is a RoCE port's congestion and loss classes, comma
	// separated ("roce-congested", "roce-lossy", "roce-rx-starved",
	// "roce-pause-storm"; "" none or not judged), RoCEEvidence each one's
	// evidence ("class: evidence", "; " between), and RoCEPauseLostGbps
	// and RoCEPauseLostPercent the bandwidth its rx pauses cost over the
	// last window (DESIGN.md section 16).
	RoCEClass            string  `json:"roceClass"`
	RoCEEvidence         string  `json:"roceEvidence"`
	RoCEPauseLostGbps    float64 `json:"rocePauseLostGbps"`
	RoCEPauseLostPercent float64 `json:"rocePauseLostPercent"`
	// CableDirection and CableSuspect are the port's cable verdict
	// (DESIGN.md section 15): which way errors flow (none, to-host,
	// from-host, both) and the part to replace first (host-transceiver,
	// peer-transceiver, cable, host-port, unknown; "" nothing). CablePart
	// names it in words (with our module's serial or the lane), and
	// CableEvidence lists the counters, lanes and reason behind it.
	CableDirection string   `json:"cableDirection"`
	CableSuspect   string   `json:"cableSuspect"`
	CablePart      string   `json:"cablePart"`
	CableEvidence  []string `json:"cableEvidence"`
}

// LatchedBreaches names the counters whose breach is latched, in counter order.
func (p *PortView) LatchedBreaches() []string {
	out := []string{}
	for _, c := range p.Counters {
		if c.Breached {
			out = append(out, c.Name)
		}
	}
	return out
}

// CounterView is one monitored counter of a port.
type CounterView struct {
	Name  string  `json:"name"`
	Value uint64  `json:"value"`
	Rate  float64 `json:"rate"`
	// Unit is the rate's unit: "sec", "min" or "hour" (per second for
	// delta counters).
	Unit              string  `json:"unit"`
	ThresholdType     string  `json:"thresholdType"`
	Threshold         float64 `json:"threshold"`
	Fatal             bool    `json:"fatal"`
	Breached          bool    `json:"breached"`
	BreachedSinceUSec uint64  `json:"breachedSinceUSec"`
	Saturated         bool    `json:"saturated"`
	LostGbps          float64 `json:"lostGbps"`
	LostPercent       float64 `json:"lostPercent"`
}

// ManagerView is the daemon-wide state.
type ManagerView struct {
	Version          string   `json:"version"`
	NodeName         string   `json:"nodeName"`
	BootID           string   `json:"bootID"`
	PollIntervalUSec uint64   `json:"pollIntervalUSec"`
	LastPollUSec     uint64   `json:"lastPollUSec"` // realtime µs of the last completed poll
	Healthy          bool     `json:"healthy"`
	Verdict          string   `json:"verdict"`    // "healthy", "degraded" or "fatal"
	FatalPorts       []string `json:"fatalPorts"` // "mlx5_0/1" style
	DegradedPorts    []string `json:"degradedPorts"`
	// Conditions are every active condition on the node, worst first.
	Conditions       []ConditionView `json:"conditions"`
	ConfigPath       string          `json:"configPath"`
	ConfigGeneration uint64          `json:"configGeneration"`
	LastReloadError  string          `json:"lastReloadError"`
	MonitoredPorts   uint32          `json:"monitoredPorts"`
	MonitoredNICs    uint32          `json:"monitoredNICs"`
	Ready            bool            `json:"ready"`
	// RejectedEvents is the number of events a sink rejected as invalid
	// and the daemon parked for an operator's retry.
	RejectedEvents uint32 `json:"rejectedEvents"`
}

// Backend is the daemon's side of the API. Its methods are called from
// D-Bus goroutines, concurrently with the poll loop, so they must lock; they
// must also not call back into the Server (Refresh) while holding that lock.
type Backend interface {
	// Manager returns the daemon-wide state.
	Manager() ManagerView
	// Ports returns the monitored ports in a stable order.
	Ports() []PortView
	// Reload does what SIGHUP does. It returns the validation error when the
	// new configuration was refused (the running one stays).
	Reload() error
	// AcknowledgeReset declares the latched breach of counter (every latched
	// counter when counter is "") on device/port remediated, on behalf of
	// uid. Errors wrap ErrNoSuchPort, ErrNotLatched or ErrInvalidArgument.
	AcknowledgeReset(device string, port int, counter string, uid uint32) error
	// RetryRejected offers the events sinks rejected as invalid to them
	// again, on behalf of uid, and returns how many were parked.
	RetryRejected(uid uint32) (uint32, error)
}

// Sentinel errors. The backend wraps them, the server maps them to D-Bus
// error names, and the client maps the names back, so errors.Is works on
// both ends of the bus.
var (
	ErrNoSuchPort      = errors.New("no such port")
	ErrNotLatched      = errors.New("no latched breach")
	ErrInvalidArgument = errors.New("invalid argument")
	ErrAccessDenied    = errors.New("access denied")
	// ErrConfigRefused marks a Reload whose new configuration failed
	// validation; the daemon keeps running the previous one.
	ErrConfigRefused = errors.New("configuration refused")
	// ErrDaemonNotRunning means the bus works but nobody owns BusName.
	ErrDaemonNotRunning = errors.New("nichealthd is not running on the system bus (" + BusName + " has no owner): start it with systemctl start nichealthd")
	// ErrBusUnreachable means the system bus itself could not be reached.
	ErrBusUnreachable = errors.New("system bus unreachable")
)
