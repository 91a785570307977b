package ansible

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// checkParamsType compares the `ansible` tags of a params struct with the
// options of a spec, both ways: an option the struct has no field for would
// be validated and then silently ignored; a field no option fills is a
// setting the user can never make. Sub-options are compared when the field
// is a struct (or pointer to / slice of structs); maps are not checked.
func checkParamsType(spec Spec, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return fmt.Errorf("params type %s is not a struct", t)
	}
	var problems []string
	compareFields("", spec.Options, t, &problems)
	if len(problems) > 0 {
		return fmt.Errorf("params struct %s does not match the spec: %s", t, strings.Join(problems, "; "))
	}
	return nil
}

func compareFields(where string, opts map[string]Option, t reflect.Type, problems *[]string) {
	fields := map[string]reflect.Type{}
	collectFields(t, fields)
	for _, name := range sortedKeys(opts) {
		ft, ok := fields[name]
		if !ok {
			*problems = append(*problems, fmt.Sprintf("option %s%s has no field (tag `ansible:%q`)", where, name, name))
			continue
		}
		if sub := opts[name].Options; len(sub) > 0 {
			if st, ok := structOf(ft); ok {
				compareFields(where+name+".", sub, st, problems)
			}
		}
	}
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if _, ok := opts[n]; !ok {
			*problems = append(*problems, fmt.Sprintf("field tagged %s%s is no option", where, n))
		}
	}
}

// collectFields maps tag names to field types, squashing embedded structs
// as Decode does.
func collectFields(t reflect.Type, out map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("ansible")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && (!hasTag || strings.Contains(opts, "squash") || name == "") {
			if st, ok := structOf(f.Type); ok && f.Type.Kind() != reflect.Slice {
				collectFields(st, out)
				continue
			}
		}
		if name == "" {
			name = f.Name // mapstructure matches the field name, case-insensitively
			name = strings.ToLower(name)
		}
		out[name] = f.Type
	}
}

// structOf returns the struct type behind pointers and slices.
func structOf(t reflect.Type) (reflect.Type, bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	return t, t.Kind() == reflect.Struct
}

// moduleParams returns the validated parameters the module decodes: the
// runtime's own options (timeout) are not the module's business.
func (r *Run) moduleParams() map[string]any {
	out := make(map[string]any, len(r.params))
	rt := r.module.runtimeOptions()
	for k, v := range r.params {
		if _, own := rt[k]; !own {
			out[k] = v
		}
	}
	return out
}

// decodeChecked is Run.Decode: the struct must match the spec exactly
// (checkParamsType), then mapstructure fills it.
func (r *Run) decodeChecked(out any) error {
	t := reflect.TypeOf(out)
	if t == nil || t.Kind() != reflect.Pointer {
		return fmt.Errorf("module %s passed %T to Decode, which needs a pointer to its params struct; this is a bug in gopve", r.module.Name, out)
	}
	if err := checkParamsType(r.module.Spec, t); err != nil {
		return fmt.Errorf("module %s: %w; this is a bug in gopve", r.module.Name, err)
	}
	return decodeParams(r.moduleParams(), out)
}
