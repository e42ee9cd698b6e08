package jsonerr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// Describe says why err, from decoding b with encoding/json, refused b:
// "line 2: assignments.switchGUID: a number where a string belongs".
// Map keys are not in the path (the decoder does not report them); the
// line finds the entry.
func Describe(b []byte, err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		where := te.Field
		if where == "" {
			where = "the top level"
		}
		found, want := jsonKind(te.Value), wantKind(te.Type)
		if n, ok := strings.CutPrefix(te.Value, "number "); ok && want == "a number" {
			// 3.5 or 1e999 for an integer: the kind is right, the value
			// is not.
			return fmt.Sprintf("line %d: %s: %s does not fit: a whole number in range belongs", lineAt(b, te.Offset), where, n)
		}
		return fmt.Sprintf("line %d: %s: %s where %s belongs", lineAt(b, te.Offset), where, found, want)
	case errors.As(err, &se) && strings.HasSuffix(se.Error(), "unexpected end of JSON input"):
		return "the file ends before the JSON does (half-written?)"
	case errors.As(err, &se):
		return fmt.Sprintf("line %d: %s", lineAt(b, se.Offset), strings.TrimPrefix(se.Error(), "json: "))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "the file ends before the JSON does (half-written?)"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// lineAt is the 1-based line of byte offset off.
func lineAt(b []byte, off int64) int {
	if b == nil {
		return 1
	}
	off = min(max(off, 0), int64(len(b)))
	return 1 + bytes.Count(b[:off], []byte("\n"))
}

// jsonKind names a JSON value kind as the decoder reports it ("string",
// "number", "object", "array", "bool") with its article.
func jsonKind(v string) string {
	switch {
	case v == "array":
		return "a list"
	case v == "object":
		return "an object"
	case strings.HasPrefix(v, "number"):
		return "a number"
	case v == "":
		return "a value"
	}
	return "a " + v
}

// wantKind is the JSON kind a Go type decodes from.
func wantKind(t reflect.Type) string {
	if t == nil {
		return "another value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another value"
}
