// Package sysfs turns the bytes of sysfs attribute files into values. Every
// function here is pure (bytes in, value or error out) so that it can be
// fuzzed and so that one malformed file fails only the value it carries,
// never a whole device.
package sysfs
