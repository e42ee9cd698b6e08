package main

import (
	"testing"

	"github.com/nichealth/nichealthd/dbusapi"
)

// A ber counter prints its bit error rate, not a rate per "ber".
func TestPHY_PortShowsBER(t *testing.T) {
	c := dbusapi.CounterView{Name: "rx_corrected_bits_phy", Rate: 1.25e-5, Unit: "ber", ThresholdType: "ber", Threshold: 1e-5}
	if got := counterRate(c); got != "BER 1.25e-05" {
		t.Errorf("rate %q", got)
	}
	if got := threshold(c); got != "ber > 1e-05" {
		t.Errorf("threshold %q", got)
	}
}
