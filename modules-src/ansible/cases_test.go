package ansible

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// ansibleCases is testdata/ansible_cases.json, recorded from the real
// AnsibleModule by testdata/gen_ansible_cases.py.
type ansibleCases struct {
	GeneratedWith string                     `json:"generated_with"`
	Specs         map[string]json.RawMessage `json:"specs"`
	Cases         []struct {
		Name       string            `json:"name"`
		Spec       string            `json:"spec"`
		Params     json.RawMessage   `json:"params"`
		Env        map[string]string `json:"env"`
		Failed     bool              `json:"failed"`
		Msg        string            `json:"msg"`
		Warnings   []string          `json:"warnings"`
		ModuleArgs json.RawMessage   `json:"module_args"`
	} `json:"cases"`
}

// knownDivergences are cases where we deliberately answer differently
// from ansible-core 2.14, with the reason.
var knownDivergences = map[string]string{
	// 2.19+ templating keeps native types, so "{{ 10 / 2 }}" arrives as 5.0;
	// rejecting it would break playbooks that work with Python modules of
	// newer ansible-core. TestCoercions checks our answer.
	"int from whole float (2.19 native templating)": "we accept floats without fraction as int",
}

func TestMatchesAnsibleModule(t *testing.T) {
	data, err := os.ReadFile("testdata/ansible_cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var file ansibleCases
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Cases) < 100 {
		t.Fatalf("only %d recorded cases; regenerate testdata", len(file.Cases))
	}
	for _, tc := range file.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			rawSpec, err := decodeJSONValue(file.Specs[tc.Spec]) // keeps 1 an int, unlike json.Unmarshal
			if err != nil {
				t.Fatal(err)
			}
			spec := specFromJSON(t, rawSpec.(map[string]any))
			params, err := decodeJSONValue(tc.Params)
			if err != nil {
				t.Fatal(err)
			}
			m := &Module{Name: "gopve_test", Spec: spec, Run: func(*Run) error { return nil }}
			inv := &Invocation{Params: params.(map[string]any)}
			env := func(k string) (string, bool) { v, ok := tc.Env[k]; return v, ok }
			res := Execute(context.Background(), m, inv, env, io.Discard)

			failed, _ := res["failed"].(bool)
			if why, ok := knownDivergences[tc.Name]; ok {
				// Checked, not skipped: AnsibleModule refuses, we accept.
				if !tc.Failed || failed {
					t.Errorf("documented divergence (%s) no longer holds: AnsibleModule failed=%v, ours failed=%v (%q)", why, tc.Failed, failed, res["msg"])
				}
				return
			}
			if failed != tc.Failed {
				t.Fatalf("failed = %v, AnsibleModule says %v (msg %q, ours %q)", failed, tc.Failed, tc.Msg, res["msg"])
			}
			if tc.Failed {
				got, _ := res["msg"].(string)
				if normalizeBoolListing(got) != normalizeBoolListing(withRuntimeOptions(tc.Msg)) {
					t.Errorf("msg:\n got  %q\n want %q", got, tc.Msg)
				}
			}
			var gotWarnings []string
			if w, ok := res["warnings"].([]any); ok {
				for _, s := range w {
					gotWarnings = append(gotWarnings, s.(string))
				}
			}
			if strings.Join(gotWarnings, "\n") != strings.Join(tc.Warnings, "\n") {
				t.Errorf("warnings = %q, want %q", gotWarnings, tc.Warnings)
			}
			want, err := decodeJSONValue(tc.ModuleArgs)
			if err != nil {
				t.Fatal(err)
			}
			got := res["invocation"].(map[string]any)["module_args"]
			// timeout is the runtime's own option, which every gopve module
			// has and the recorded AnsibleModule specs do not
			delete(got.(map[string]any), TimeoutOption)
			if !pyEqual(got, want) {
				gj, _ := json.Marshal(got)
				wj, _ := json.Marshal(want)
				t.Errorf("module_args:\n got  %s\n want %s", gj, wj)
			}
		})
	}
}

// normalizeBoolListing cuts the list of valid booleans, which Python prints
// in hash-seed order.
func normalizeBoolListing(s string) string {
	if i := strings.Index(s, "Valid booleans include: "); i >= 0 {
		return s[:i]
	}
	return s
}

// specFromJSON builds a Spec from the argument_spec dict the generator
// hands to AnsibleModule, so both sides use the same spec text.
func specFromJSON(t *testing.T, raw map[string]any) Spec {
	t.Helper()
	spec := Spec{Options: optionsFromJSON(t, raw["argument_spec"].(map[string]any))}
	spec.Constraints = constraintsFromJSON(raw)
	return spec
}

func optionsFromJSON(t *testing.T, raw map[string]any) map[string]Option {
	opts := map[string]Option{}
	for name, v := range raw {
		o := v.(map[string]any)
		var opt Option
		for k, val := range o {
			switch k {
			case "type":
				opt.Type = Type(val.(string))
			case "elements":
				opt.Elements = Type(val.(string))
			case "required":
				opt.Required = val.(bool)
			case "default":
				opt.Default = val
			case "choices":
				opt.Choices = val.([]any)
			case "aliases":
				opt.Aliases = stringsOf(val)
			case "no_log":
				opt.NoLog = val.(bool)
			case "fallback_env":
				opt.EnvFallback = stringsOf(val)
			case "apply_defaults":
				opt.ApplyDefaults = val.(bool)
			case "options":
				opt.Options = optionsFromJSON(t, val.(map[string]any))
			case "mutually_exclusive", "required_together", "required_one_of", "required_if", "required_by":
			default:
				t.Fatalf("option %s: spec key %s not understood by the test", name, k)
			}
		}
		opt.Constraints = constraintsFromJSON(o)
		opts[name] = opt
	}
	return opts
}

func constraintsFromJSON(raw map[string]any) Constraints {
	var c Constraints
	groups := func(v any) [][]string {
		var out [][]string
		for _, g := range v.([]any) {
			out = append(out, stringsOf(g))
		}
		return out
	}
	if v, ok := raw["mutually_exclusive"]; ok {
		c.MutuallyExclusive = groups(v)
	}
	if v, ok := raw["required_together"]; ok {
		c.RequiredTogether = groups(v)
	}
	if v, ok := raw["required_one_of"]; ok {
		c.RequiredOneOf = groups(v)
	}
	if v, ok := raw["required_if"]; ok {
		for _, r := range v.([]any) {
			rule := r.([]any)
			ri := RequiredIf{Key: rule[0].(string), Value: rule[1], Requirements: stringsOf(rule[2])}
			if len(rule) == 4 {
				ri.Any = rule[3].(bool)
			}
			c.RequiredIf = append(c.RequiredIf, ri)
		}
	}
	if v, ok := raw["required_by"]; ok {
		c.RequiredBy = map[string][]string{}
		for k, list := range v.(map[string]any) {
			c.RequiredBy[k] = stringsOf(list)
		}
	}
	return c
}

func stringsOf(v any) []string {
	var out []string
	for _, e := range v.([]any) {
		out = append(out, e.(string))
	}
	return out
}

// withRuntimeOptions adds the runtime's own timeout option to the list of
// supported top-level parameters in a recorded AnsibleModule message: every
// gopve module has it, the recorded specs do not.
func withRuntimeOptions(msg string) string {
	m := supportedList.FindStringSubmatchIndex(msg)
	if m == nil || strings.Contains(msg[m[2]:m[3]], ".") { // a sub-option's list
		return msg
	}
	names := append(strings.Split(msg[m[4]:m[5]], ", "), TimeoutOption)
	slices.Sort(names)
	return msg[:m[4]] + strings.Join(names, ", ") + msg[m[5]:]
}

var supportedList = regexp.MustCompile(`module: (.*?)\. Supported parameters include: ([a-z_0-9, ]+?)( \(|\.$)`)
