package main

import (
	"reflect"
	"strings"
	"unicode"
)

// termSafe returns a copy of v with every string in it safe to print on a
// terminal: each control character (C0, DEL, C1: what starts an escape
// sequence) is shown as \xNN or \u00NN. The daemon passes on text from
// files anyone with access to the host may have written (the GPU metadata
// file, sysfs values), and an escape sequence in it must be shown, never
// run by the operator's terminal. The --json output needs none of this:
// JSON escapes control characters itself.
func termSafe[T any](v T) T {
	out := reflect.New(reflect.TypeOf(&v).Elem()).Elem()
	out.Set(safeValue(reflect.ValueOf(&v).Elem()))
	return out.Interface().(T)
}

func safeValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.String:
		s := reflect.New(v.Type()).Elem()
		s.SetString(escapeControls(v.String()))
		return s
	case reflect.Struct:
		s := reflect.New(v.Type()).Elem()
		s.Set(v)
		for i := 0; i < v.NumField(); i++ {
			if s.Field(i).CanSet() {
				s.Field(i).Set(safeValue(v.Field(i)))
			}
		}
		return s
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		s := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := 0; i < v.Len(); i++ {
			s.Index(i).Set(safeValue(v.Index(i)))
		}
		return s
	case reflect.Array:
		s := reflect.New(v.Type()).Elem()
		for i := 0; i < v.Len(); i++ {
			s.Index(i).Set(safeValue(v.Index(i)))
		}
		return s
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		m := reflect.MakeMapWithSize(v.Type(), v.Len())
		it := v.MapRange()
		for it.Next() {
			m.SetMapIndex(safeValue(it.Key()), safeValue(it.Value()))
		}
		return m
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		p := reflect.New(v.Type().Elem())
		p.Elem().Set(safeValue(v.Elem()))
		return p
	}
	return v
}

// escapeControls shows each control character of s as an escape.
func escapeControls(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 0x80 && unicode.IsControl(r):
			const hex = "0123456789abcdef"
			b.WriteString(`\x`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&0xf])
		case unicode.IsControl(r):
			b.WriteString(`\u00`)
			const hex = "0123456789abcdef"
			b.WriteByte(hex[(r>>4)&0xf])
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
