package ansible

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
)

var moduleName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Check reports the mistakes in a module definition that would otherwise
// surface only when a user hits them: undocumented options, unknown types,
// a required option with a default, constraints naming options that do not
// exist, defaults or choices of the wrong type. The registry test runs it
// on every module.
func (m *Module) Check() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !moduleName.MatchString(m.Name) {
		add("module name %q must be lower_snake_case", m.Name)
	}
	if m.ShortDescription == "" {
		add("module %s: ShortDescription is empty", m.Name)
	}
	if len(m.Description) == 0 {
		add("module %s: Description is empty", m.Name)
	}
	if m.Run == nil {
		add("module %s: Run is nil", m.Name)
	}
	if strings.TrimSpace(m.Examples) == "" {
		add("module %s: Examples is empty", m.Name)
	}
	for name := range m.runtimeOptions() {
		if _, ok := m.Spec.Options[name]; ok {
			add("module %s: option %s is provided by the runtime to every module; do not declare it", m.Name, name)
		}
	}
	if m.Params == nil {
		add("module %s: Params is nil (set it to the zero value of the struct Run.Decode fills)", m.Name)
	} else if err := checkParamsType(m.Spec, reflect.TypeOf(m.Params)); err != nil {
		add("module %s: %v", m.Name, err)
	}
	checkOptions(m.Name, m.Spec.Options, m.Spec.Constraints, add)
	checkFragments(m.Name, m.Spec, add)
	return errors.Join(errs...)
}

// checkOptions checks a spec's options and, recursively, their
// sub-options: the names, each option's own declaration, and the options
// the constraints name.
func checkOptions(where string, opts map[string]Option, c Constraints, add func(string, ...any)) {
	checkNames(where, opts, add)
	for _, name := range sortedKeys(opts) {
		at := where + "." + name
		if strings.HasPrefix(name, "_") {
			add("%s: option names must not start with _", at)
		}
		checkOption(at, opts[name], add)
	}
	checkConstraints(where, opts, c, add)
}

// checkNames: no name is both an option and an alias, or two aliases.
func checkNames(where string, opts map[string]Option, add func(string, ...any)) {
	names := map[string]bool{}
	for _, name := range sortedKeys(opts) {
		if names[name] {
			add("%s: %s is both an option and an alias", where, name)
		}
		names[name] = true
		for _, a := range opts[name].Aliases {
			if _, isOption := opts[a]; isOption || names[a] {
				add("%s: alias %s of %s is already a name", where, a, name)
			}
			names[a] = true
		}
	}
}

// checkOption checks one option's declaration: docs, type, default and
// choices of that type, and sub-options only where the type takes them.
func checkOption(at string, o Option, add func(string, ...any)) {
	if len(o.Description) == 0 {
		add("%s: no Description (docs are generated from the spec)", at)
	}
	t := o.Type
	if t == "" {
		t = TypeStr
	}
	if !validType(t) {
		add("%s: unknown Type %q", at, t)
	}
	if o.Elements != "" && (t != TypeList || !validType(o.Elements)) {
		add("%s: Elements %q needs Type list and a known element type", at, o.Elements)
	}
	if o.Required && o.Default != nil {
		add("%s: Required and Default together (AnsibleModule rejects that)", at)
	}
	checkValues(at, t, o, add)
	hasSub := len(o.Options) > 0
	if hasSub && t != TypeDict && !(t == TypeList && o.Elements == TypeDict) {
		add("%s: Options need Type dict or list with Elements dict", at)
	}
	if !hasSub && (o.ApplyDefaults || !constraintsEmpty(o.Constraints)) {
		add("%s: ApplyDefaults/constraints without sub-Options", at)
	}
	if hasSub {
		checkOptions(at, o.Options, o.Constraints, add)
	}
}

// checkValues: the Default and each of the Choices are values of type t
// (of its elements for a list), and the Default is one of the Choices.
func checkValues(at string, t Type, o Option, add func(string, ...any)) {
	env := func(string) (string, bool) { return "", false }
	if o.Default != nil {
		if _, err := checkType(t, normalizeValue(o.Default), env); err != nil {
			add("%s: Default %v is not a valid %s: %v", at, o.Default, t, err)
		}
	}
	elemType := t
	if t == TypeList && o.Elements != "" {
		elemType = o.Elements
	}
	for _, ch := range o.Choices {
		if _, err := checkType(elemType, normalizeValue(ch), env); err != nil {
			add("%s: choice %v is not a valid %s", at, ch, elemType)
		}
	}
	if o.Default != nil && o.Choices != nil && t != TypeList {
		def, _ := checkType(t, normalizeValue(o.Default), env)
		if !containsValue(normalizeValue(o.Choices).([]any), def) {
			add("%s: Default %v is not one of the Choices", at, o.Default)
		}
	}
}

// checkConstraints: every option a constraint names is an option.
func checkConstraints(where string, opts map[string]Option, c Constraints, add func(string, ...any)) {
	known := func(n string) bool { _, ok := opts[n]; return ok }
	check := func(kind string, groups [][]string) {
		for _, g := range groups {
			for _, n := range g {
				if !known(n) {
					add("%s: %s names unknown option %s", where, kind, n)
				}
			}
		}
	}
	check("mutually_exclusive", c.MutuallyExclusive)
	check("required_together", c.RequiredTogether)
	check("required_one_of", c.RequiredOneOf)
	for _, r := range c.RequiredIf {
		check("required_if", [][]string{append([]string{r.Key}, r.Requirements...)})
	}
	for k, v := range c.RequiredBy {
		check("required_by", [][]string{append([]string{k}, v...)})
	}
}

func constraintsEmpty(c Constraints) bool {
	return len(c.MutuallyExclusive) == 0 && len(c.RequiredTogether) == 0 && len(c.RequiredOneOf) == 0 &&
		len(c.RequiredIf) == 0 && len(c.RequiredBy) == 0
}

func validType(t Type) bool {
	switch t {
	case TypeStr, TypeInt, TypeFloat, TypeBool, TypeList, TypeDict, TypePath, TypeRaw:
		return true
	}
	return false
}
