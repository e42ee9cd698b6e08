package spelling

import "testing"

func TestNearest(t *testing.T) {
	known := []string{"symbol_error", "link_downed", "port_rcv_errors", "rx", "pollingInterval", "readTimeout"}
	for _, tc := range []struct{ word, want string }{
		{"symbol_eror", "symbol_error"},  // a letter dropped
		{"symbol_erorr", "symbol_error"}, // two letters swapped
		{"Symbol_Error", "symbol_error"}, // case
		{"link_downd", "link_downed"},    // a letter dropped
		{"pollinginterval", "pollingInterval"},
		{"pollInterval", ""},   // three edits: not a typo
		{"x", ""},              // one letter is nobody's typo of "rx"
		{"my_new_counter", ""}, // a new name, not a typo
		{"", ""},
	} {
		if got := Nearest(tc.word, known); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"ab", "ba", 1}, {"symbol_eror", "symbol_error", 1},
	} {
		if got := distance(tc.a, tc.b); got != tc.d {
			t.Errorf("distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
}
