package adminapi

import "reflect"

// maxCleanDepth bounds cleanStrings on nested values.
const maxCleanDepth = 10

// cleanStrings cleans, in place, every exported string reachable from v
// (a pointer to what was just decoded from a proxy), map keys included:
// the admin API's answer is a peer's text, cleaned where it is decoded.
// It walks the value rather than naming fields, so a field added to the
// wire types later is cleaned too (TestDecodedAdminStringsAreClean).
func cleanStrings(v any) {
	cleanValue(reflect.ValueOf(v), 0)
}

func cleanValue(v reflect.Value, depth int) {
	if depth > maxCleanDepth {
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			cleanValue(v.Elem(), depth+1)
		}
	case reflect.String:
		if v.CanSet() {
			v.SetString(Clean(v.String()))
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				cleanValue(v.Field(i), depth+1)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			cleanValue(v.Index(i), depth+1)
		}
	case reflect.Map:
		if v.IsNil() || !v.CanSet() {
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), v.Len())
		it := v.MapRange()
		for it.Next() {
			k := reflect.New(v.Type().Key()).Elem()
			k.Set(it.Key())
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			cleanValue(k, depth+1)
			cleanValue(e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	}
}
