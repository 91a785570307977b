package ansible

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os/user"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// The checkers below are AnsibleModule's check_type_* functions
// (module_utils/common/validation.py): same accepted inputs, same error
// text, so users see the messages they know from Python modules.

// checkType coerces v to t. The error text is what Python's checker raises.
func checkType(t Type, v any, env Env) (any, error) {
	switch t {
	case TypeStr, "":
		return pyStr(v), nil
	case TypeInt:
		return checkInt(v)
	case TypeFloat:
		return checkFloat(v)
	case TypeBool:
		return checkBool(v)
	case TypeList:
		return checkList(v)
	case TypeDict:
		return checkDict(v)
	case TypePath:
		return expandPath(pyStr(v), env), nil
	case TypeRaw:
		return v, nil
	}
	return nil, fmt.Errorf("internal error: unknown type %q", t)
}

var (
	boolTrue  = map[string]bool{"y": true, "yes": true, "on": true, "1": true, "true": true, "t": true}
	boolFalse = map[string]bool{"n": true, "no": true, "off": true, "0": true, "false": true, "f": true}
)

// boolListing is the "Valid booleans include" part of the error. Python
// prints a frozenset whose order depends on the hash seed; ours is fixed.
const boolListing = "'y', 'yes', 'on', '1', 'true', 't', 1, 1.0, True, 'n', 'no', 'off', '0', 'false', 'f', 0, 0.0, False"

func checkBool(v any) (any, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case string:
		n := strings.ToLower(strings.TrimSpace(x))
		if boolTrue[n] {
			return true, nil
		}
		if boolFalse[n] {
			return false, nil
		}
	case int, float64:
		f, _ := pyNumber(x)
		if f == 1 {
			return true, nil
		}
		if f == 0 {
			return false, nil
		}
	default:
		return nil, fmt.Errorf("%s cannot be converted to a bool", pyTypeName(v))
	}
	//lint:ignore ST1005 AnsibleModule's own wording, compared verbatim with its recorded answers
	return nil, fmt.Errorf("The value '%s' is not a valid boolean.  Valid booleans include: %s", pyStr(v), boolListing)
}

// checkInt accepts ints, strings Python's int() parses, and (like newer
// ansible-core, unlike 2.14) floats without a fractional part, because
// 2.19's native templating turns "{{ 10 / 2 }}" into 5.0. A bool becomes
// 0/1 (Python keeps True, which equals 1 but would not decode into an int).
func checkInt(v any) (any, error) {
	switch x := v.(type) {
	case int:
		return x, nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<62 {
			return int(x), nil
		}
	case string:
		if n, ok := pyParseInt(x); ok {
			return n, nil
		}
	}
	return nil, fmt.Errorf("%s cannot be converted to an int", pyTypeName(v))
}

func checkFloat(v any) (any, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case int:
		return float64(x), nil
	case bool:
		if x {
			return 1.0, nil
		}
		return 0.0, nil
	case string:
		if f, ok := pyParseFloat(x); ok {
			return f, nil
		}
	}
	return nil, fmt.Errorf("%s cannot be converted to a float", pyTypeName(v))
}

func checkList(v any) (any, error) {
	switch x := v.(type) {
	case []any:
		return x, nil
	case string:
		parts := strings.Split(x, ",")
		out := make([]any, len(parts))
		for i, p := range parts {
			out[i] = p
		}
		return out, nil
	case int, float64, bool: // bool is an int in Python
		return []any{pyStr(x)}, nil
	}
	return nil, fmt.Errorf("%s cannot be converted to a list", pyTypeName(v))
}

func checkDict(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		return x, nil
	case string:
		if strings.HasPrefix(x, "{") {
			parsed, err := decodeJSONValue([]byte(x))
			if m, ok := parsed.(map[string]any); err == nil && ok {
				return m, nil
			}
			return nil, errors.New("unable to evaluate string as dictionary")
		}
		if strings.Contains(x, "=") {
			return parseKeyValue(x)
		}
		return nil, errors.New("dictionary requested, could not parse JSON or key=value")
	}
	return nil, fmt.Errorf("%s cannot be converted to a dict", pyTypeName(v))
}

// parseKeyValue is check_type_dict's "k=v, k2='v 2'" parser: fields are
// split on unquoted commas and spaces, quotes and backslashes escape.
func parseKeyValue(s string) (any, error) {
	var fields []string
	var buf []rune
	var inQuote rune
	inEscape := false
	for _, c := range strings.TrimSpace(s) {
		switch {
		case inEscape:
			buf = append(buf, c)
			inEscape = false
		case c == '\\':
			inEscape = true
		case inQuote == 0 && (c == '\'' || c == '"'):
			inQuote = c
		case inQuote != 0 && c == inQuote:
			inQuote = 0
		case inQuote == 0 && (c == ',' || c == ' '):
			if len(buf) > 0 {
				fields = append(fields, string(buf))
			}
			buf = buf[:0]
		default:
			buf = append(buf, c)
		}
	}
	if len(buf) > 0 {
		fields = append(fields, string(buf))
	}
	out := make(map[string]any, len(fields))
	for i, f := range fields {
		k, val, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("dictionary update sequence element #%d has length 1; 2 is required", i)
		}
		out[k] = val
	}
	return out, nil
}

// pyParseInt accepts what Python's int(str) accepts for ASCII input:
// surrounding whitespace, a sign, and single underscores between digits.
func pyParseInt(s string) (int, bool) {
	s = strings.TrimFunc(s, unicode.IsSpace)
	digits, ok := stripUnderscores(s)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	return int(n), true
}

var pyFloatSyntax = regexp.MustCompile(`^[+-]?((\d(_?\d)*)?\.?\d(_?\d)*([eE][+-]?\d(_?\d)*)?|\d(_?\d)*\.([eE][+-]?\d(_?\d)*)?)$`)

// pyParseFloat accepts what Python's float(str) accepts, except nan and
// infinities, which JSON cannot carry back to the controller.
func pyParseFloat(s string) (float64, bool) {
	s = strings.TrimFunc(s, unicode.IsSpace)
	if !pyFloatSyntax.MatchString(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

var pyIntSyntax = regexp.MustCompile(`^[+-]?\d(_?\d)*$`)

func stripUnderscores(s string) (string, bool) {
	if !pyIntSyntax.MatchString(s) {
		return "", false
	}
	return strings.ReplaceAll(s, "_", ""), true
}

var envVarRef = regexp.MustCompile(`\$(\w+|\{[^}]*\})`)

// expandPath is os.path.expanduser(os.path.expandvars(p)): variables that
// are not set are left as written, as Python does.
func expandPath(p string, env Env) string {
	p = envVarRef.ReplaceAllStringFunc(p, func(ref string) string {
		name := strings.TrimSuffix(strings.TrimPrefix(ref[1:], "{"), "}")
		if v, ok := env(name); ok {
			return v
		}
		return ref
	})
	if !strings.HasPrefix(p, "~") {
		return p
	}
	name, rest, _ := strings.Cut(p[1:], "/")
	var home string
	if name == "" {
		if h, ok := env("HOME"); ok {
			home = h
		} else if u, err := user.Current(); err == nil {
			home = u.HomeDir
		} else {
			return p
		}
	} else {
		u, err := user.Lookup(name)
		if err != nil {
			return p
		}
		home = u.HomeDir
	}
	if home != "/" {
		home = strings.TrimRight(home, "/")
	}
	if rest == "" && !strings.Contains(p, "/") {
		if home == "" {
			return "/"
		}
		return home
	}
	if home == "/" {
		return "/" + rest
	}
	return home + "/" + rest
}

// decodeJSONValue decodes JSON keeping integers apart from floats, the way
// Python's json module does.
func decodeJSONValue(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("extra data after the JSON value")
	}
	// A second Decode must hit EOF for the document to be one value.
	var extra any
	if err := dec.Decode(&extra); err == nil {
		return nil, errors.New("extra data after the JSON value")
	}
	return fromJSONNumbers(v), nil
}

func fromJSONNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		s := x.String()
		if !strings.ContainsAny(s, ".eE") {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return int(n)
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil { // out of range: keep the text rather than lose it
			return s
		}
		return f
	case []any:
		for i, e := range x {
			x[i] = fromJSONNumbers(e)
		}
		return x
	case map[string]any:
		for k, e := range x {
			x[k] = fromJSONNumbers(e)
		}
		return x
	}
	return v
}
