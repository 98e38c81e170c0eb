// Package peertest is for tests only: it fills every string a value can
// hold with hostile terminal text, and finds the strings of a decoded
// value that are not clean. A decoder's test fills the wire form, decodes
// it through the real boundary and asks Unclean for the paths that kept
// the hostile text, so a field added later fails the test until it is
// cleaned where it is decoded. It imports textfmt only.
package peertest

import (
	"fmt"
	"reflect"

	"github.com/dbxtop/dbxtop/textfmt"
)

// Hostile is what a hostile peer puts in every string: a terminal reset
// (ESC c), a C1 CSI clearing the screen, an OSC 8 link, a DCS, an APC,
// mouse tracking on, leaving the alternate screen, a right-to-left
// override, a byte that is not UTF-8, and a line break.
const Hostile = "a\r\n\x1bc\u009b2J\x1b]8;;https://example.invalid\x07link\x1b]8;;\x07" +
	"\x1bP1$r\x1b\\\x1b_apc\x1b\\\x1b[?1000h\x1b[?1049l\u202eevil\xffz"

// maxDepth bounds Fill on recursive types.
const maxDepth = 10

// Fill sets every exported string reachable from v (a pointer) to
// Hostile, string map keys included: nil pointers are allocated, slices
// get one element, maps one entry. Unexported fields are left alone, as
// encoding/json leaves them.
func Fill(v any) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		panic("peertest.Fill needs a non-nil pointer")
	}
	fill(rv.Elem(), 0)
}

func fill(v reflect.Value, depth int) {
	if depth > maxDepth || !v.CanSet() {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(Hostile)
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem(), depth+1)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), depth+1)
		}
	case reflect.Map:
		k := reflect.New(v.Type().Key()).Elem()
		fill(k, depth+1)
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, depth+1)
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(k, e)
		v.Set(m)
	}
}

// Unclean walks every string reachable from v, exported or not, map keys
// included, and returns the paths of those that still hold a control
// sequence or a line break (textfmt.Line would change them), and how many
// strings it saw that are not empty. A field named in multiline (the SQL)
// may keep line breaks: it is checked with textfmt.Block.
func Unclean(v any, multiline ...string) (bad []string, seen int) {
	w := walker{visited: map[uintptr]bool{}, multi: map[string]bool{}}
	for _, f := range multiline {
		w.multi[f] = true
	}
	w.walk(reflect.ValueOf(v), reflect.TypeOf(v).String())
	return w.bad, w.seen
}

type walker struct {
	visited map[uintptr]bool
	multi   map[string]bool
	block   bool // the string being walked is a multiline field's
	bad     []string
	seen    int
}

func (w *walker) walk(v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if s != "" {
			w.seen++
		}
		clean := textfmt.Line(s)
		if w.block {
			clean = textfmt.Block(s)
		}
		if clean != s {
			w.bad = append(w.bad, path)
		}
	case reflect.Pointer:
		if v.IsNil() || w.visited[v.Pointer()] {
			return
		}
		w.visited[v.Pointer()] = true
		w.walk(v.Elem(), path)
	case reflect.Interface:
		if !v.IsNil() {
			w.walk(v.Elem(), path)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			name := v.Type().Field(i).Name
			outer := w.block
			w.block = w.multi[name]
			w.walk(v.Field(i), path+"."+name)
			w.block = outer
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			w.walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			w.walk(it.Key(), path+"{key}")
			w.walk(it.Value(), path+"[value]")
		}
	}
}
