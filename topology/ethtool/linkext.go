package ethtool

import "fmt"

// What golang.org/x/sys/unix (v0.49.0) lacks of the extended link state,
// as include/uapi/linux/ethtool.h defines it (torvalds/linux, commit
// 02018c544ef1: enum ethtool_link_ext_state and the substate enums). The
// values are the kernel's ABI and never change.
const (
	// ETHTOOL_LINK_EXT_STATE_MODULE: the link is down because of the
	// transceiver module (Linux 5.16, "ethtool: Add transceiver module
	// extended state"), after ETHTOOL_LINK_EXT_STATE_OVERHEAT = 9.
	linkExtStateModule = 10
	// enum ethtool_link_ext_substate_bad_signal_integrity: 3 and 4 came
	// after unix's ETHTOOL_LINK_EXT_SUBSTATE_BSI_UNSUPPORTED_RATE = 2.
	linkExtSubstateBSISerdesReferenceClockLost = 3
	linkExtSubstateBSISerdesALOS               = 4
	// enum ethtool_link_ext_substate_module.
	linkExtSubstateModuleCMISNotReady = 1
)

// ExtState is the kernel's extended link state: why a link is down, where
// the driver knows. mlx5 maps its firmware's port troubleshooting codes
// onto it since Linux 5.13 (drivers/net/ethernet/mellanox/mlx5/core/
// en_ethtool.c, mlx5e_get_link_ext_state) and answers only while the
// carrier is down.
type ExtState uint8

// The states of enum ethtool_link_ext_state, in their ABI order.
const (
	ExtAutoneg ExtState = iota
	ExtLinkTrainingFailure
	ExtLinkLogicalMismatch
	ExtBadSignalIntegrity
	ExtNoCable
	ExtCableIssue
	ExtEEPROMIssue
	ExtCalibrationFailure
	ExtPowerBudgetExceeded
	ExtOverheat
	ExtModule ExtState = linkExtStateModule
)

// extNames are the states' stable machine names (the UAPI names in lower
// case: the linkDownReason metadata value) and their words in a sentence.
var extNames = map[ExtState][2]string{
	ExtAutoneg:             {"autoneg", "auto-negotiation failed"},
	ExtLinkTrainingFailure: {"link_training_failure", "link training failed"},
	ExtLinkLogicalMismatch: {"link_logical_mismatch", "logical mismatch between the link ends"},
	ExtBadSignalIntegrity:  {"bad_signal_integrity", "bad signal integrity"},
	ExtNoCable:             {"no_cable", "no cable"},
	ExtCableIssue:          {"cable_issue", "cable issue"},
	ExtEEPROMIssue:         {"eeprom_issue", "the module's EEPROM cannot be read"},
	ExtCalibrationFailure:  {"calibration_failure", "calibration failed"},
	ExtPowerBudgetExceeded: {"power_budget_exceeded", "the module exceeds the port's power budget"},
	ExtOverheat:            {"overheat", "the module overheated"},
	ExtModule:              {"module", "transceiver module problem"},
}

// extSubNames names each state's substates (1-based; 0 is "none").
var extSubNames = map[ExtState]map[uint8][2]string{
	ExtAutoneg: {
		1: {"no_partner_detected", "no partner detected"},
		2: {"ack_not_received", "acknowledge not received"},
		3: {"next_page_exchange_failed", "next page exchange failed"},
		4: {"no_partner_detected_force_mode", "no partner detected during force mode"},
		5: {"fec_mismatch_during_override", "FEC mismatch during override"},
		6: {"no_hcd", "no highest common denominator"},
	},
	ExtLinkTrainingFailure: {
		1: {"kr_frame_lock_not_acquired", "KR frame lock not acquired"},
		2: {"kr_link_inhibit_timeout", "KR link inhibit timeout"},
		3: {"kr_link_partner_did_not_set_receiver_ready", "the partner did not set receiver ready"},
		4: {"remote_fault", "remote fault"},
	},
	ExtLinkLogicalMismatch: {
		1: {"pcs_did_not_acquire_block_lock", "PCS did not acquire block lock"},
		2: {"pcs_did_not_acquire_am_lock", "PCS did not acquire AM lock"},
		3: {"pcs_did_not_get_align_status", "PCS did not get align status"},
		4: {"fc_fec_is_not_locked", "FC FEC is not locked"},
		5: {"rs_fec_is_not_locked", "RS FEC is not locked"},
	},
	ExtBadSignalIntegrity: {
		1: {"large_number_of_physical_errors", "large number of physical errors"},
		2: {"unsupported_rate", "unsupported rate"},
		linkExtSubstateBSISerdesReferenceClockLost: {"serdes_reference_clock_lost", "SerDes reference clock lost"},
		linkExtSubstateBSISerdesALOS:               {"serdes_alos", "SerDes analog loss of signal"},
	},
	ExtCableIssue: {
		1: {"unsupported_cable", "unsupported cable"},
		2: {"cable_test_failure", "cable test failure"},
	},
	ExtModule: {
		linkExtSubstateModuleCMISNotReady: {"cmis_not_ready", "the CMIS module is not in ModuleReady state"},
	},
}

// Name is the state's machine name; an unknown state (a newer kernel's)
// is "state_<n>".
func (s ExtState) Name() string {
	if n, ok := extNames[s]; ok {
		return n[0]
	}
	return fmt.Sprintf("state_%d", s)
}

// Words is the state in a sentence.
func (s ExtState) Words() string {
	if n, ok := extNames[s]; ok {
		return n[1]
	}
	return fmt.Sprintf("extended link state %d", s)
}

// SubName is substate sub's machine name under s ("" for 0).
func (s ExtState) SubName(sub uint8) string {
	if sub == 0 {
		return ""
	}
	if n, ok := extSubNames[s][sub]; ok {
		return n[0]
	}
	return fmt.Sprintf("substate_%d", sub)
}

// SubWords is substate sub in a sentence ("" for 0).
func (s ExtState) SubWords(sub uint8) string {
	if sub == 0 {
		return ""
	}
	if n, ok := extSubNames[s][sub]; ok {
		return n[1]
	}
	return fmt.Sprintf("substate %d", sub)
}

// LinkState is what ETHTOOL_MSG_LINKSTATE_GET answers for a netdev.
type LinkState struct {
	// Link is the carrier as ethtool sees it; HasLink is false when the
	// driver does not say.
	Link, HasLink bool
	// HasExt: the driver gave a reason (mlx5 does only while the carrier
	// is down, and only when its firmware knows one).
	HasExt      bool
	Ext         ExtState
	ExtSubstate uint8
	// DownCount is the driver's count of link-down events
	// (ETHTOOL_A_LINKSTATE_EXT_DOWN_CNT, Linux 6.7), when it keeps one.
	DownCount    uint32
	HasDownCount bool
}

// Reason is the link-down reason in a sentence, "" when the driver gave
// none: "cable issue: unsupported cable".
func (l LinkState) Reason() string {
	if !l.HasExt {
		return ""
	}
	if w := l.Ext.SubWords(l.ExtSubstate); w != "" {
		return l.Ext.Words() + ": " + w
	}
	return l.Ext.Words()
}

// ParseExt is the inverse of Name and SubName: the state and substate
// whose machine names are name and sub ("" for no substate).
func ParseExt(name, sub string) (ExtState, uint8, bool) {
	for s, n := range extNames {
		if n[0] != name {
			continue
		}
		if sub == "" {
			return s, 0, true
		}
		for v, sn := range extSubNames[s] {
			if sn[0] == sub {
				return s, v, true
			}
		}
		return 0, 0, false
	}
	return 0, 0, false
}
