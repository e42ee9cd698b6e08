package config

import "testing"

// TestRules_15_CheckNamesAreTheSeeds: the rules run under the seeds' names
// (state 6.2 NICPortDrop, 6.3 RepeatedNICLinkFlap, counter 1.4
// RepeatedNICDegradation); a configuration naming them by their former
// names keeps working.
func TestRules_15_CheckNamesAreTheSeeds(t *testing.T) {
	m, err := ParseChecks([]string{"RepeatedNICLinkFlap", "NICPortDrop", "RepeatedNICDegradation"})
	if err != nil || len(m) != 3 {
		t.Fatalf("%v %v", m, err)
	}
	old, err := ParseChecks([]string{"NICLinkFlapRule", "NICPortDropRule", "NICDegradationRule"})
	if err != nil || !old["RepeatedNICLinkFlap"] || !old["NICPortDrop"] || !old["RepeatedNICDegradation"] || len(old) != 3 {
		t.Fatalf("former names: %v %v", old, err)
	}
	if _, err := ParseChecks([]string{"NoSuchRule"}); err == nil {
		t.Fatal("an unknown check accepted")
	}
}
