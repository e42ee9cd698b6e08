// Package spelling suggests the known name nearest a misspelt one, so a
// configuration error can say "did you mean symbol_error" instead of only
// "unknown".
package spelling
