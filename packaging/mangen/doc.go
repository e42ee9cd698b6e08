// Command mangen turns the one Markdown-like source of nichealthd's manual
// pages (packaging/man/nichealth.md) into troff, and checks that the
// manual and the shipped default configuration document the same keys.
// Keeping every page in one source, and failing the build when the
// configuration keys drift apart, is what keeps the manual true.
package main
