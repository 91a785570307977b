package ansible

import (
	"fmt"
	"sort"
	"strings"
)

// This file is ansible-core's ArgumentSpecValidator.validate
// (module_utils/common/arg_spec.py and parameters.py) in Go: the same
// steps in the same order, so the first error a user sees is the one
// AnsibleModule would have shown, worded the same way. Where Python's
// behaviour depends on dict or set iteration order, options are visited in
// sorted order.

// validation collects what validating one parameter set produces.
type validation struct {
	env         Env
	secrets     []string
	errors      []string // in Python's order; the first one is reported
	warnings    []string
	unsupported []unsupportedParam
}

type unsupportedParam struct {
	name      string   // dotted path, e.g. "disks.foo"
	supported []string // canonical names at that level
	aliases   []string // alias names at that level
}

// validateParams validates and coerces params in place (aliases resolved,
// defaults applied) and returns the outcome.
func validateParams(spec Spec, params map[string]any, env Env, ignoreUnknown bool) *validation {
	v := &validation{env: env}
	v.secrets = append(v.secrets, v.setFallbacks(spec.Options, params)...)

	aliases, err := handleAliases(spec.Options, params, func(option, alias string) {
		v.warnings = append(v.warnings, fmt.Sprintf("Both option %s and its alias %s are set.", option, alias))
	})
	if err != nil {
		v.errors = append(v.errors, err.Error())
	}
	if err := v.listNoLogValues(spec.Options, params); err != nil {
		v.errors = append(v.errors, err.Error())
	}
	v.findUnsupported(spec.Options, params, aliases, nil)

	v.checkLevel(spec.Options, spec.Constraints, params, nil, "")

	if ignoreUnknown {
		// _ansible_ignore_unknown_opts (2.17+): unknown options are dropped
		// instead of failing the task.
		for _, u := range v.unsupported {
			if !strings.Contains(u.name, ".") {
				delete(params, u.name)
			}
		}
		v.unsupported = nil
	}
	if len(v.unsupported) > 0 {
		names := make([]string, len(v.unsupported))
		for i, u := range v.unsupported {
			names[i] = u.name
		}
		sort.Strings(names)
		// Python lists the supported names of whichever unsupported entry
		// its set yields last; we take the last in sorted order.
		var last unsupportedParam
		for _, u := range v.unsupported {
			if u.name == names[len(names)-1] {
				last = u
			}
		}
		supported := strings.Join(last.supported, ", ")
		if len(last.aliases) > 0 {
			supported += " (" + strings.Join(last.aliases, ", ") + ")"
		}
		v.errors = append(v.errors, unsupportedPrefix+strings.Join(names, ", ")+". Supported parameters include: "+supported+".")
	}
	return v
}

// unsupportedPrefix marks the error that needs the "Unsupported parameters
// for (NAME) module: " prefix, which only the caller knows.
const unsupportedPrefix = "\x00unsupported:"

// checkLevel runs the steps that follow alias handling for one level of
// options: mutually_exclusive, defaults, required, types, choices, the
// other constraints, defaults again, then the sub-options.
func (v *validation) checkLevel(opts map[string]Option, c Constraints, params map[string]any, ctx []string, prefix string) {
	v.add(checkMutuallyExclusive(c.MutuallyExclusive, params), ctx)
	v.secrets = append(v.secrets, setDefaults(opts, params, false)...)
	v.add(checkRequiredArguments(opts, params), ctx)
	v.validateTypes(opts, params, ctx)
	v.validateValues(opts, params, ctx)
	v.add(checkRequiredTogether(c.RequiredTogether, params), ctx)
	v.add(checkRequiredOneOf(c.RequiredOneOf, params), ctx)
	v.add(checkRequiredIf(c.RequiredIf, params), ctx)
	v.add(checkRequiredBy(c.RequiredBy, params), ctx)
	v.secrets = append(v.secrets, setDefaults(opts, params, true)...)
	v.validateSubSpecs(opts, params, ctx, prefix)
}

// add records a constraint failure, suffixed with the sub-option context
// the way Python's check_* functions do it.
func (v *validation) add(msg string, ctx []string) {
	if msg == "" {
		return
	}
	if len(ctx) > 0 {
		msg += " found in " + strings.Join(ctx, " -> ")
	}
	v.errors = append(v.errors, msg)
}

func (v *validation) setFallbacks(opts map[string]Option, params map[string]any) []string {
	var secrets []string
	for _, name := range sortedKeys(opts) {
		o := opts[name]
		if _, given := params[name]; given || len(o.EnvFallback) == 0 {
			continue
		}
		for _, key := range o.EnvFallback {
			if val, ok := v.env(key); ok {
				if o.NoLog && val != "" {
					secrets = append(secrets, val)
				}
				params[name] = val
				break
			}
		}
	}
	return secrets
}

// handleAliases copies each alias's value to its canonical name (the alias
// key stays, as in AnsibleModule) and returns alias → canonical name.
func handleAliases(opts map[string]Option, params map[string]any, warn func(option, alias string)) (map[string]string, error) {
	result := map[string]string{}
	for _, name := range sortedKeys(opts) {
		o := opts[name]
		if o.Default != nil && o.Required {
			return result, fmt.Errorf("internal error: required and default are mutually exclusive for %s", name)
		}
		for _, alias := range o.Aliases {
			result[alias] = name
			if val, ok := params[alias]; ok {
				if _, both := params[name]; both {
					warn(name, alias)
				}
				params[name] = val
			}
		}
	}
	return result, nil
}

func (v *validation) findUnsupported(opts map[string]Option, params map[string]any, aliases map[string]string, ctx []string) {
	for _, k := range sortedKeys(params) {
		if _, ok := opts[k]; ok {
			continue
		}
		if _, ok := aliases[k]; ok {
			continue
		}
		u := unsupportedParam{name: strings.Join(append(append([]string(nil), ctx...), k), ".")}
		u.supported = sortedKeys(opts)
		u.aliases = sortedKeys(aliases)
		v.unsupported = append(v.unsupported, u)
	}
}

// listNoLogValues collects the values of no_log options, before coercion,
// as Python's _list_no_log_values does, including inside sub-options.
func (v *validation) listNoLogValues(opts map[string]Option, params map[string]any) error {
	for _, name := range sortedKeys(opts) {
		o := opts[name]
		if o.NoLog {
			v.secrets = append(v.secrets, noLogStrings(params[name])...)
		}
		if o.Options == nil {
			continue
		}
		sub, ok := params[name]
		if !ok || sub == nil {
			continue
		}
		if o.Type != TypeDict && !(o.Type == TypeList && o.Elements == TypeDict) {
			continue
		}
		list, isList := sub.([]any)
		if !isList {
			list = []any{sub}
		}
		for _, e := range list {
			if s, ok := e.(string); ok {
				d, err := checkDict(s)
				if err != nil {
					return err
				}
				e = d
			}
			m, ok := e.(map[string]any)
			if !ok {
				//lint:ignore ST1005 AnsibleModule's own wording (typo included), compared verbatim with its recorded answers
				return fmt.Errorf("Value '%s' in the sub parameter field '%s' must by a %s, not '%s'",
					pyStr(e), name, o.Type, strings.TrimSuffix(strings.TrimPrefix(pyTypeName(e), "<class '"), "'>"))
			}
			if err := v.listNoLogValues(o.Options, m); err != nil {
				return err
			}
		}
	}
	return nil
}

// noLogStrings is _return_datastructure_name: the string forms of every
// non-empty scalar inside a value.
func noLogStrings(val any) []string {
	switch x := val.(type) {
	case nil, bool:
		return nil
	case string:
		if x == "" {
			return nil
		}
		return []string{x}
	case int, float64:
		if f, _ := pyNumber(x); f == 0 {
			return nil // falsy values are skipped by `if no_log_object:`
		}
		return []string{pyStr(x)}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, noLogStrings(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for _, k := range sortedKeys(x) {
			out = append(out, noLogStrings(x[k])...)
		}
		return out
	}
	return nil
}

// setDefaults applies defaults; with all=false only non-null defaults (the
// first pass, before the required check), with all=true every missing
// option becomes null.
func setDefaults(opts map[string]Option, params map[string]any, all bool) []string {
	var secrets []string
	for _, name := range sortedKeys(opts) {
		o := opts[name]
		if _, ok := params[name]; ok {
			continue
		}
		def := normalizeValue(o.Default)
		if def == nil && !all {
			continue
		}
		if o.NoLog && def != nil {
			secrets = append(secrets, noLogStrings(def)...)
		}
		params[name] = deepCopy(def)
	}
	return secrets
}

func (v *validation) validateTypes(opts map[string]Option, params map[string]any, ctx []string) {
	for _, name := range sortedKeys(opts) {
		o := opts[name]
		val, ok := params[name]
		if !ok || val == nil {
			continue
		}
		t := o.Type
		if t == "" {
			t = TypeStr
		}
		coerced, err := checkType(t, val, v.env)
		if err != nil {
			msg := fmt.Sprintf("argument '%s' is of type %s", name, pyTypeName(val))
			if len(ctx) > 0 {
				msg += fmt.Sprintf(" found in '%s'.", strings.Join(ctx, " -> "))
			}
			msg += fmt.Sprintf(" and we were unable to convert to %s: %s", t, err)
			v.errors = append(v.errors, msg)
			continue
		}
		if s, ok := coerced.(string); ok && o.NoLog && s != "" && t == TypePath {
			v.secrets = append(v.secrets, s) // the expanded form is secret too
		}
		params[name] = coerced
		if o.Elements == "" {
			continue
		}
		list, ok := coerced.([]any)
		if t != TypeList || !ok {
			msg := fmt.Sprintf("Invalid type %s for option '%s'", t, pyStr(coerced))
			if len(ctx) > 0 {
				msg += fmt.Sprintf(" found in '%s'.", strings.Join(ctx, " -> "))
			}
			v.errors = append(v.errors, msg+", elements value check is supported only with 'list' type")
			continue
		}
		out := make([]any, 0, len(list))
		for _, e := range list {
			ce, err := checkType(o.Elements, e, v.env)
			if err != nil {
				msg := fmt.Sprintf("Elements value for option '%s'", name)
				if len(ctx) > 0 {
					msg += fmt.Sprintf(" found in '%s'", strings.Join(ctx, " -> "))
				}
				msg += fmt.Sprintf(" is of type %s and we were unable to convert to %s: %s", pyTypeName(e), o.Elements, err)
				v.errors = append(v.errors, msg)
				continue
			}
			out = append(out, ce)
		}
		params[name] = out
	}
}

var (
	boolTrueValues  = []any{"y", "yes", "on", "1", "true", "t", 1, 1.0, true}
	boolFalseValues = []any{"n", "no", "off", "0", "false", "f", 0, 0.0, false}
)

func (v *validation) validateValues(opts map[string]Option, params map[string]any, ctx []string) {
	suffix := ""
	if len(ctx) > 0 {
		suffix = " found in " + strings.Join(ctx, " -> ")
	}
	for _, name := range sortedKeys(opts) {
		o := opts[name]
		if o.Choices == nil {
			continue
		}
		val, ok := params[name]
		if !ok {
			continue
		}
		choices := normalizeValue(o.Choices).([]any)
		choiceStrs := make([]string, len(choices))
		for i, c := range choices {
			choiceStrs[i] = pyStr(c)
		}
		if list, ok := val.([]any); ok {
			var bad []string
			for _, item := range list {
				if !containsValue(choices, item) {
					bad = append(bad, pyStr(item))
				}
			}
			if len(bad) > 0 {
				v.errors = append(v.errors, fmt.Sprintf("value of %s must be one or more of: %s. Got no match for: %s",
					name, strings.Join(choiceStrs, ", "), strings.Join(bad, ", "))+suffix)
			}
			continue
		}
		if containsValue(choices, val) {
			continue
		}
		// YAML turned an unquoted yes/no into a bool that the controller
		// sent as "True"/"False": map it back when only one choice fits.
		for _, bs := range []struct {
			text   string
			values []any
		}{{"False", boolFalseValues}, {"True", boolTrueValues}} {
			if val != bs.text {
				continue
			}
			var overlap []any
			for _, c := range choices {
				if containsValue(bs.values, c) && !containsValue(overlap, c) {
					overlap = append(overlap, c)
				}
			}
			if len(overlap) == 1 {
				val = overlap[0]
				params[name] = val
			}
		}
		if !containsValue(choices, val) {
			v.errors = append(v.errors, fmt.Sprintf("value of %s must be one of: %s, got: %s",
				name, strings.Join(choiceStrs, ", "), pyStr(val))+suffix)
		}
	}
}

func containsValue(list []any, v any) bool {
	for _, e := range list {
		if pyEqual(e, v) {
			return true
		}
	}
	return false
}

func (v *validation) validateSubSpecs(opts map[string]Option, params map[string]any, ctx []string, prefix string) {
	for _, name := range sortedKeys(opts) {
		o := opts[name]
		if o.Type != TypeDict && !(o.Type == TypeList && o.Elements == TypeDict) {
			continue
		}
		if o.ApplyDefaults {
			if o.Options == nil {
				continue
			}
			if params[name] == nil {
				params[name] = map[string]any{}
			}
		} else if o.Options == nil || params[name] == nil {
			continue
		}
		subCtx := append(append([]string(nil), ctx...), name)
		elements, isList := params[name].([]any)
		if !isList {
			elements = []any{params[name]}
		}
		for idx, e := range elements {
			sub, ok := e.(map[string]any)
			if !ok {
				v.errors = append(v.errors, fmt.Sprintf("value of '%s' must be of type dict or list of dicts", name))
				continue
			}
			v.secrets = append(v.secrets, v.setFallbacks(o.Options, sub)...)
			newPrefix := prefix + name
			if o.Type == TypeList {
				newPrefix += fmt.Sprintf("[%d]", idx)
			}
			newPrefix += "."
			aliases, err := handleAliases(o.Options, sub, func(option, alias string) {
				v.warnings = append(v.warnings, fmt.Sprintf("Both option %s%s and its alias %s%s are set.", newPrefix, option, newPrefix, alias))
			})
			if err != nil {
				v.errors = append(v.errors, err.Error())
			}
			if err := v.listNoLogValues(o.Options, sub); err != nil {
				v.errors = append(v.errors, err.Error())
			}
			v.findUnsupported(o.Options, sub, aliases, subCtx)
			v.checkLevel(o.Options, o.Constraints, sub, subCtx, newPrefix)
		}
	}
}

// The check_* functions of module_utils/common/validation.py. Each returns
// the message of the first failure or "". Presence means "key present",
// even with a null value, as count_terms does.

func present(params map[string]any, term string) bool {
	_, ok := params[term]
	return ok
}

func countTerms(terms []string, params map[string]any) int {
	seen := map[string]bool{}
	for _, t := range terms {
		if present(params, t) {
			seen[t] = true
		}
	}
	return len(seen)
}

func checkMutuallyExclusive(groups [][]string, params map[string]any) string {
	var bad []string
	for _, g := range groups {
		if countTerms(g, params) > 1 {
			bad = append(bad, strings.Join(g, "|"))
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return "parameters are mutually exclusive: " + strings.Join(bad, ", ")
}

func checkRequiredArguments(opts map[string]Option, params map[string]any) string {
	var missing []string
	for _, name := range sortedKeys(opts) {
		if opts[name].Required && !present(params, name) {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "missing required arguments: " + strings.Join(missing, ", ")
}

func checkRequiredTogether(groups [][]string, params map[string]any) string {
	for _, g := range groups {
		n := 0
		for _, t := range g {
			if present(params, t) {
				n++
			}
		}
		if n > 0 && n < len(g) {
			return "parameters are required together: " + strings.Join(g, ", ")
		}
	}
	return ""
}

func checkRequiredOneOf(groups [][]string, params map[string]any) string {
	for _, g := range groups {
		if countTerms(g, params) == 0 {
			return "one of the following is required: " + strings.Join(g, ", ")
		}
	}
	return ""
}

func checkRequiredIf(rules []RequiredIf, params map[string]any) string {
	for _, r := range rules {
		val, ok := params[r.Key]
		if !ok || !pyEqual(val, normalizeValue(r.Value)) {
			continue
		}
		var missing []string
		for _, t := range r.Requirements {
			if !present(params, t) {
				missing = append(missing, t)
			}
		}
		requires, maxMissing := "all", 0
		if r.Any {
			requires, maxMissing = "any", len(r.Requirements)
		}
		if len(missing) > 0 && len(missing) >= maxMissing {
			return fmt.Sprintf("%s is %s but %s of the following are missing: %s",
				r.Key, pyStr(normalizeValue(r.Value)), requires, strings.Join(missing, ", "))
		}
	}
	return ""
}

func checkRequiredBy(reqs map[string][]string, params map[string]any) string {
	for _, key := range sortedKeys(reqs) {
		if params[key] == nil {
			continue
		}
		var missing []string
		for _, t := range reqs[key] {
			if params[t] == nil {
				missing = append(missing, t)
			}
		}
		if len(missing) > 0 {
			return fmt.Sprintf("missing parameter(s) required by '%s': %s", key, strings.Join(missing, ", "))
		}
	}
	return ""
}
