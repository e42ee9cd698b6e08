package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/nichealth/nichealthd/internal/spelling"
)

// decodeFailure turns the TOML decoder's error into one that teaches: the
// key as the operator wrote it (with the entry's index in an array of
// tables), the line, what was written and what the key expects. go-toml's
// own words ("cannot decode TOML string into struct field
// countertable.Override.Threshold of type float64") name Go types an
// operator never sees. It returns nil for an error it cannot place.
func decodeFailure(path string, doc []byte, err error) *Error {
	var sm *toml.StrictMissingError
	if errors.As(err, &sm) && len(sm.Errors) > 0 {
		de := &sm.Errors[0]
		row, _ := de.Position()
		parts := de.Key()
		reason := "unknown key (check the spelling; see nichealthd.toml(5))"
		if len(parts) > 0 {
			if near := spelling.Nearest(parts[len(parts)-1], keysOf(parts[:len(parts)-1])); near != "" {
				reason = fmt.Sprintf("unknown key: did you mean %s? (see nichealthd.toml(5))", near)
			}
		}
		return &Error{File: path, Key: indexedKey(doc, parts, row), Line: row, Reason: reason}
	}
	var de *toml.DecodeError
	if !errors.As(err, &de) {
		return nil
	}
	row, col := de.Position()
	parts := de.Key()
	if len(parts) == 0 {
		// A syntax error belongs to no key: the position is all there is.
		return &Error{File: path, Reason: fmt.Sprintf("line %d column %d: %s", row, col, strings.TrimPrefix(de.Error(), "toml: "))}
	}
	name := parts[len(parts)-1]
	reason := strings.TrimPrefix(de.Error(), "toml: ")
	if t := typeAt(parts); t != nil {
		written := writtenValue(doc, row)
		if written == "" {
			written = "the value"
		}
		reason = fmt.Sprintf("%s is not %s", written, expectation(t, name))
	}
	return &Error{File: path, Key: indexedKey(doc, parts, row), Line: row, Reason: reason}
}

var durationType = reflect.TypeFor[Duration]()

// expectation says what a key of type t takes, with an example written as
// it would be in the file.
func expectation(t reflect.Type, name string) string {
	switch {
	case t == durationType:
		return fmt.Sprintf("a duration: write it quoted, e.g. %s = \"1s\" or \"250ms\"", name)
	}
	switch t.Kind() {
	case reflect.Bool:
		return fmt.Sprintf("true or false: write it without quotes, e.g. %s = true", name)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("a whole number: write digits without quotes, e.g. %s = 4", name)
	case reflect.Float32, reflect.Float64:
		return fmt.Sprintf("a number: write digits without quotes, e.g. %s = 10", name)
	case reflect.String:
		return fmt.Sprintf("a string: write it quoted, e.g. %s = \"...\"", name)
	case reflect.Slice:
		if isArrayOfTables(t) {
			return fmt.Sprintf("a list of tables: write each as [[...%s]]", name)
		}
		return fmt.Sprintf("a list: write it in brackets, e.g. %s = [\"a\", \"b\"]", name)
	case reflect.Map, reflect.Struct:
		return fmt.Sprintf("a table: write it as [...%s] with keys under it", name)
	}
	return "of the expected type (see nichealthd.toml(5))"
}

// typeAt walks File by TOML key; nil when a part names no field.
func typeAt(parts []string) reflect.Type {
	t := reflect.TypeFor[File]()
	for _, p := range parts {
		t = table(t)
		switch t.Kind() {
		case reflect.Map:
			t = t.Elem()
			continue
		case reflect.Struct:
		default:
			return nil
		}
		f, ok := fieldByTag(t, p)
		if !ok {
			return nil
		}
		t = f.Type
	}
	return deref(t)
}

// table is the type a key of type t holds its keys in: through pointers,
// and from an array of tables to one entry.
func table(t reflect.Type) reflect.Type {
	t = deref(t)
	if isArrayOfTables(t) {
		return deref(t.Elem())
	}
	return t
}

func isArrayOfTables(t reflect.Type) bool {
	return t.Kind() == reflect.Slice && deref(t.Elem()).Kind() == reflect.Struct && deref(t.Elem()) != durationType
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, _, _ := strings.Cut(f.Tag.Get("toml"), ","); tag == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// keysOf lists the keys the table at parts accepts (for "did you mean").
func keysOf(parts []string) []string {
	t := reflect.TypeFor[File]()
	if len(parts) > 0 {
		if t = typeAt(parts); t == nil {
			return nil
		}
		t = table(t)
	}
	if t.Kind() != reflect.Struct || t == durationType {
		return nil
	}
	var keys []string
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ","); tag != "" && tag != "-" {
			keys = append(keys, tag)
		}
	}
	sort.Strings(keys)
	return keys
}

// indexedKey is the dotted key with the index of its entry where a part is
// an array of tables ("counterDetection.counters[1].threshold"): the
// decoder drops it, and with three entries the operator needs it. The
// index is the number of the array's headers above row, less one.
func indexedKey(doc []byte, parts []string, row int) string {
	for n := len(parts) - 1; n >= 1; n-- {
		if t := typeAt(parts[:n]); t == nil || !isArrayOfTables(t) {
			continue
		}
		table := strings.Join(parts[:n], ".")
		idx := -1
		sc := bufio.NewScanner(bytes.NewReader(doc))
		sc.Buffer(make([]byte, 0, 4096), maxConfigBytes)
		for line := 1; line <= row && sc.Scan(); line++ {
			l := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(l, "[[") {
				if i := strings.Index(l, "]]"); i > 0 && cleanKey(l[2:i]) == table {
					idx++
				}
			}
		}
		if idx < 0 {
			break
		}
		return fmt.Sprintf("%s[%d].%s", table, idx, strings.Join(parts[n:], "."))
	}
	return strings.Join(parts, ".")
}

// writtenValue is the value as written on line row (1-based) of doc: the
// text after the first '=', comment removed; "" when there is none.
func writtenValue(doc []byte, row int) string {
	sc := bufio.NewScanner(bytes.NewReader(doc))
	sc.Buffer(make([]byte, 0, 4096), maxConfigBytes)
	for line := 1; sc.Scan(); line++ {
		if line != row {
			continue
		}
		_, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			return ""
		}
		v = strings.TrimSpace(v)
		if i := strings.Index(v, " #"); i >= 0 {
			v = strings.TrimSpace(v[:i])
		}
		if len(v) > 80 {
			v = v[:77] + "..."
		}
		return v
	}
	return ""
}
