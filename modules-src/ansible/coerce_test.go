package ansible

import (
	"math"
	"strings"
	"testing"
)

// Cases AnsibleModule cannot answer for us (deliberate differences, Go-only
// inputs) or that pin Python formatting rules the recorded cases rely on.
func TestCoercions(t *testing.T) {
	env := func(k string) (string, bool) {
		m := map[string]string{"HOME": "/home/u/", "X": "x"}
		v, ok := m[k]
		return v, ok
	}
	tests := []struct {
		typ     Type
		in      any
		want    any
		wantErr string
	}{
		{TypeInt, 5.0, 5, ""}, // 2.19 native templating: {{ 10 / 2 }}
		{TypeInt, -3.0, -3, ""},
		{TypeInt, 5.5, nil, "<class 'float'> cannot be converted to an int"},
		{TypeInt, true, 1, ""},
		{TypeInt, "+7", 7, ""},
		{TypeInt, "1__0", nil, "cannot be converted to an int"},
		{TypeInt, "99999999999999999999", nil, "cannot be converted to an int"},
		{TypeFloat, "1e400", nil, "cannot be converted to a float"},
		{TypeFloat, "nan", nil, "cannot be converted to a float"},
		{TypeFloat, ".5", 0.5, ""},
		{TypeFloat, "5.", 5.0, ""},
		{TypeFloat, "1_0.5", 10.5, ""},
		{TypeFloat, false, 0.0, ""},
		{TypeBool, "TRUE", true, ""},
		{TypeBool, 0.5, nil, "The value '0.5' is not a valid boolean"},
		{TypeBool, nil, nil, "<class 'NoneType'> cannot be converted to a bool"},
		{TypeList, true, []any{"True"}, ""},
		{TypeList, "", []any{""}, ""},
		{TypeDict, "a=1=2", map[string]any{"a": "1=2"}, ""},
		{TypeDict, "{\"a\": 1} x", nil, "unable to evaluate string as dictionary"},
		{TypeDict, "{[1]}", nil, "unable to evaluate string as dictionary"},
		{TypePath, "~/d/$X", "/home/u/d/x", ""},
		{TypePath, "~", "/home/u", ""},
		{TypePath, "~no_such_user_here/x", "~no_such_user_here/x", ""},
		{TypePath, "${X}y$Y", "xy$Y", ""},
		{TypeStr, 1e16, "1e+16", ""},
		{TypeStr, 123456789012345.0, "123456789012345.0", ""},
		{TypeStr, 0.0001, "0.0001", ""},
		{TypeStr, 1.5e-7, "1.5e-07", ""},
		{TypeStr, -2.5, "-2.5", ""},
		{TypeStr, map[string]any{"b": "it's", "a": []any{nil, false}}, `{'a': [None, False], 'b': "it's"}`, ""},
		{TypeStr, "tab\there", "tab\there", ""},
		{TypeStr, []any{"tab\there", `back\slash`}, `['tab\there', 'back\\slash']`, ""},
		{TypeRaw, []any{1}, []any{1}, ""},
	}
	for _, tc := range tests {
		got, err := checkType(tc.typ, tc.in, env)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s(%#v): error %v, want %q", tc.typ, tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s(%#v): %v", tc.typ, tc.in, err)
			continue
		}
		if !pyEqual(got, tc.want) || pyTypeName(got) != pyTypeName(tc.want) {
			t.Errorf("%s(%#v) = %#v, want %#v", tc.typ, tc.in, got, tc.want)
		}
	}
}

func TestPyFloatRepr(t *testing.T) {
	for in, want := range map[float64]string{
		0: "0.0", 1: "1.0", 0.1: "0.1", 1e15: "1000000000000000.0", 1e16: "1e+16", 1.5e300: "1.5e+300",
		0.00012: "0.00012", 0.000012: "1.2e-05", -1e-10: "-1e-10", math.Inf(1): "inf", 2.5: "2.5",
	} {
		if got := pyFloatRepr(in); got != want {
			t.Errorf("repr(%v) = %s, want %s", in, got, want)
		}
	}
}

func TestMaskValueRules(t *testing.T) {
	secrets := []string{"s3cret", "42"}
	in := map[string]any{
		"exact":  "s3cret",
		"inside": "a s3cret b",
		"number": 1420,
		"float":  4.2,
		"bool":   true,
		"list":   []any{"s3cret", "x"},
	}
	got := maskValue(in, secrets, nil).(map[string]any)
	want := map[string]any{
		"exact": noLogPlaceholder, "inside": "a ******** b", "number": noLogPlaceholder,
		"float": 4.2, "bool": true, "list": []any{noLogPlaceholder, "x"},
	}
	if !pyEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
	if in["exact"] != "s3cret" {
		t.Error("maskValue modified its input")
	}
}

func TestModuleCheck(t *testing.T) {
	type sub struct {
		C int `ansible:"c"`
	}
	type params struct {
		A string `ansible:"a"`
		B []sub  `ansible:"b"`
	}
	good := func() Module {
		return Module{Name: "pve_ok", ShortDescription: "x", Description: []string{"x"}, Examples: "- x: {}",
			Run: func(*Run) error { return nil }, Params: params{},
			Spec: Spec{Options: map[string]Option{
				"a": {Type: TypeStr, Description: []string{"a"}, Choices: []any{"x", "y"}, Default: "x"},
				"b": {Type: TypeList, Elements: TypeDict, Description: []string{"b"},
					Options: map[string]Option{"c": {Type: TypeInt, Description: []string{"c"}}}},
			}}}
	}
	if err := func() error { m := good(); return m.Check() }(); err != nil {
		t.Fatalf("good module rejected: %v", err)
	}
	tests := []struct {
		name   string
		mutate func(m *Module)
		want   string
	}{
		{"bad name", func(m *Module) { m.Name = "Pve-X" }, "lower_snake_case"},
		{"undocumented option", func(m *Module) { o := m.Spec.Options["a"]; o.Description = nil; m.Spec.Options["a"] = o }, "no Description"},
		{"unknown type", func(m *Module) { o := m.Spec.Options["a"]; o.Type = "string"; m.Spec.Options["a"] = o }, `unknown Type "string"`},
		{"required with default", func(m *Module) { o := m.Spec.Options["a"]; o.Required = true; m.Spec.Options["a"] = o }, "Required and Default"},
		{"default not a choice", func(m *Module) { o := m.Spec.Options["a"]; o.Default = "z"; m.Spec.Options["a"] = o }, "not one of the Choices"},
		{"bad default type", func(m *Module) {
			m.Spec.Options["n"] = Option{Type: TypeInt, Default: "many", Description: []string{"n"}}
		}, "not a valid int"},
		{"constraint on unknown option", func(m *Module) { m.Spec.MutuallyExclusive = [][]string{{"a", "zz"}} }, "unknown option zz"},
		{"alias clashes", func(m *Module) { o := m.Spec.Options["a"]; o.Aliases = []string{"b"}; m.Spec.Options["a"] = o }, "alias b of a"},
		{"elements without list", func(m *Module) { o := m.Spec.Options["a"]; o.Elements = TypeStr; m.Spec.Options["a"] = o }, "Elements"},
		{"sub-option problem", func(m *Module) {
			b := m.Spec.Options["b"]
			b.Options["c"] = Option{Type: TypeInt}
			m.Spec.Options["b"] = b
		}, "pve_ok.b.c: no Description"},
		{"declares the runtime's timeout", func(m *Module) {
			m.Spec.Options["timeout"] = Option{Type: TypeInt, Description: []string{"t"}}
		}, "option timeout is provided by the runtime"},
		{"no params struct", func(m *Module) { m.Params = nil }, "Params is nil"},
		{"option without field", func(m *Module) {
			m.Spec.Options["extra"] = Option{Description: []string{"e"}}
		}, "option extra has no field"},
		{"sub-option without field", func(m *Module) {
			b := m.Spec.Options["b"]
			b.Options["d"] = Option{Description: []string{"d"}}
			m.Spec.Options["b"] = b
		}, "option b.d has no field"},
		{"field without option", func(m *Module) { delete(m.Spec.Options, "a") }, "field tagged a is no option"},
		{"no examples", func(m *Module) { m.Examples = "" }, "Examples"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := good()
			tc.mutate(&m)
			err := m.Check()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check() = %v, want mention of %q", err, tc.want)
			}
		})
	}
}
