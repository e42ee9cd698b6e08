package ethtool

import (
	"strings"
	"testing"
)

// uapiLinkExt is every value of the kernel's enum ethtool_link_ext_state
// and its substate enums (include/uapi/linux/ethtool.h), as literals with
// their UAPI names: state value, substate value (0: the state alone),
// ETHTOOL_LINK_EXT_STATE_<state> and ETHTOOL_LINK_EXT_SUBSTATE_<xx>_<sub>
// in lower case.
var uapiLinkExt = []struct {
	state, sub    uint8
	name, subName string
}{
	{0, 0, "autoneg", ""},
	{0, 1, "autoneg", "no_partner_detected"},
	{0, 2, "autoneg", "ack_not_received"},
	{0, 3, "autoneg", "next_page_exchange_failed"},
	{0, 4, "autoneg", "no_partner_detected_force_mode"},
	{0, 5, "autoneg", "fec_mismatch_during_override"},
	{0, 6, "autoneg", "no_hcd"},
	{1, 0, "link_training_failure", ""},
	{1, 1, "link_training_failure", "kr_frame_lock_not_acquired"},
	{1, 2, "link_training_failure", "kr_link_inhibit_timeout"},
	{1, 3, "link_training_failure", "kr_link_partner_did_not_set_receiver_ready"},
	{1, 4, "link_training_failure", "remote_fault"},
	{2, 0, "link_logical_mismatch", ""},
	{2, 1, "link_logical_mismatch", "pcs_did_not_acquire_block_lock"},
	{2, 2, "link_logical_mismatch", "pcs_did_not_acquire_am_lock"},
	{2, 3, "link_logical_mismatch", "pcs_did_not_get_align_status"},
	{2, 4, "link_logical_mismatch", "fc_fec_is_not_locked"},
	{2, 5, "link_logical_mismatch", "rs_fec_is_not_locked"},
	{3, 0, "bad_signal_integrity", ""},
	{3, 1, "bad_signal_integrity", "large_number_of_physical_errors"},
	{3, 2, "bad_signal_integrity", "unsupported_rate"},
	{3, 3, "bad_signal_integrity", "serdes_reference_clock_lost"},
	{3, 4, "bad_signal_integrity", "serdes_alos"},
	{4, 0, "no_cable", ""},
	{5, 0, "cable_issue", ""},
	{5, 1, "cable_issue", "unsupported_cable"},
	{5, 2, "cable_issue", "cable_test_failure"},
	{6, 0, "eeprom_issue", ""},
	{7, 0, "calibration_failure", ""},
	{8, 0, "power_budget_exceeded", ""},
	{9, 0, "overheat", ""},
	{10, 0, "module", ""},
	{10, 1, "module", "cmis_not_ready"},
}

// TestLinkExt_40_12_EveryReasonOfTheKernelsEnum: every link-down reason
// the kernel can send decodes, from a reply built with the UAPI's
// attribute numbers as literals (ETHTOOL_A_LINKSTATE_LINK 2, _EXT_STATE
// 5, _EXT_SUBSTATE 6, _EXT_DOWN_CNT 7), to its own name and its own
// words; no two share them, none is taken for a newer kernel's unknown
// value, and each name reads back to its value (the state file and the
// events carry names).
func TestLinkExt_40_12_EveryReasonOfTheKernelsEnum(t *testing.T) {
	seen := map[string]bool{}
	for _, u := range uapiLinkExt {
		var e encoder
		e.u8(2, 0)
		e.u8(5, u.state)
		if u.sub != 0 {
			e.u8(6, u.sub)
		}
		e.u32(7, 3)
		s, err := ParseLinkState(e.b)
		if err != nil {
			t.Fatal(err)
		}
		if !s.HasLink || s.Link || !s.HasExt || uint8(s.Ext) != u.state || s.ExtSubstate != u.sub || !s.HasDownCount || s.DownCount != 3 {
			t.Errorf("state %d substate %d: decoded %+v", u.state, u.sub, s)
			continue
		}
		if s.Ext.Name() != u.name || s.Ext.SubName(s.ExtSubstate) != u.subName {
			t.Errorf("state %d substate %d: named %q %q, want %q %q", u.state, u.sub, s.Ext.Name(), s.Ext.SubName(s.ExtSubstate), u.name, u.subName)
		}
		reason := s.Reason()
		if reason == "" || strings.Contains(reason, "extended link state") || strings.Contains(reason, "substate") {
			t.Errorf("state %d substate %d: reason %q is not in words", u.state, u.sub, reason)
		}
		if seen[reason] {
			t.Errorf("state %d substate %d: reason %q said of another", u.state, u.sub, reason)
		}
		seen[reason] = true
		if st, sub, ok := ParseExt(u.name, u.subName); !ok || uint8(st) != u.state || sub != u.sub {
			t.Errorf("ParseExt(%q, %q) = %d %d %v", u.name, u.subName, st, sub, ok)
		}
	}
	// The kernel's next value is not a known one.
	if n := ExtState(11).Name(); n != "state_11" {
		t.Errorf("state 11 named %q", n)
	}
}
