// Package patterntable is the kernel-log pattern table as data (DESIGN.md
// section 11): the default patterns with the driver wordings they match,
// the TOML overrides merged by name, and their validation. The kernel-log
// check (checks/kernellog) compiles and judges records against them.
package patterntable
