package ansible

import (
	"fmt"
	"strings"
)

// parseArgs reads the flat args file of the binary-module protocol. Known
// `_ansible_*` keys are read leniently (booleans with Ansible's boolean
// rules, numbers from strings); unknown ones are ignored because every
// ansible-core release adds some. `_gopve_*` keys are ours and never
// reach validation.
func parseArgs(data []byte) (*Invocation, error) {
	v, err := decodeJSONValue(data)
	if err != nil {
		return nil, fmt.Errorf("the args file is not valid JSON (%v); it should be written by Ansible", err)
	}
	raw, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the args file holds a JSON %s, not an object of module arguments", jsonKind(v))
	}
	inv := &Invocation{Params: make(map[string]any, len(raw))}
	for k, val := range raw {
		switch {
		case strings.HasPrefix(k, "_ansible_"):
			if err := inv.setInternal(strings.TrimPrefix(k, "_ansible_"), val); err != nil {
				return nil, err
			}
		case strings.HasPrefix(k, "_gopve_"):
			if k == "_gopve_module" {
				s, ok := val.(string)
				if !ok {
					return nil, fmt.Errorf("_gopve_module must be a module name string, got %s", jsonKind(val))
				}
				inv.GopveModule = s
			}
		default:
			inv.Params[k] = val
		}
	}
	return inv, nil
}

func (inv *Invocation) setInternal(name string, val any) error {
	boolean := func(dst *bool) error {
		if val == nil {
			return nil
		}
		b, err := checkBool(val)
		if err != nil {
			return fmt.Errorf("_ansible_%s: %w", name, err)
		}
		*dst = b.(bool)
		return nil
	}
	switch name {
	case "check_mode":
		return boolean(&inv.CheckMode)
	case "diff":
		return boolean(&inv.Diff)
	case "no_log":
		return boolean(&inv.NoLog)
	case "ignore_unknown_opts":
		return boolean(&inv.IgnoreUnknownOpts)
	case "inject_invocation":
		var b bool
		if val == nil {
			return nil
		}
		if err := boolean(&b); err != nil {
			return err
		}
		inv.InjectInvocation = &b
	case "verbosity":
		if val == nil {
			return nil
		}
		n, err := checkInt(val)
		if err != nil {
			return fmt.Errorf("_ansible_verbosity: %w", err)
		}
		inv.Verbosity = n.(int)
	case "version":
		if val != nil {
			inv.AnsibleVersion = pyStr(val)
		}
	case "module_name":
		if val != nil {
			inv.ModuleName = pyStr(val)
		}
	}
	return nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case int, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
