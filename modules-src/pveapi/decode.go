package pveapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/go-viper/mapstructure/v2"
)

// Decode stores an answer's `data` into out. A *json.RawMessage gets the
// bytes as they are; anything else is decoded tolerantly, because PVE's
// JSON types follow Perl's scalars, not the schema: numbers arrive as
// strings ("nodeid":"1"), booleans as 0/1 or "0"/"1", lists as
// comma-separated strings. Struct fields use the `json` tag.
func Decode(raw json.RawMessage, out any) error {
	if rm, ok := out.(*json.RawMessage); ok {
		*rm = append((*rm)[:0], raw...)
		return nil
	}
	var generic any
	if err := json.Unmarshal(raw, &generic); err != nil {
		return err
	}
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{
		TagName:          "json",
		Result:           out,
		WeaklyTypedInput: true,
		DecodeHook:       mapstructure.ComposeDecodeHookFunc(listHook, boolHook),
	})
	if err != nil {
		return err
	}
	return dec.Decode(generic)
}

// listHook turns "a,b; c" into []string{"a","b","c"}.
func listHook(from, to reflect.Type, data any) (any, error) {
	if from.Kind() == reflect.String && to.Kind() == reflect.Slice && to.Elem().Kind() == reflect.String {
		return SplitList(data.(string)), nil
	}
	return data, nil
}

// boolHook accepts what PVE sends for a boolean: 0/1 as numbers or strings,
// JSON booleans, and the CLI words.
func boolHook(from, to reflect.Type, data any) (any, error) {
	if to.Kind() != reflect.Bool {
		return data, nil
	}
	switch v := data.(type) {
	case string:
		return ParseBool(v)
	case float64:
		return v != 0, nil
	}
	return data, nil
}

// ParseBool reads PVE's boolean spellings.
func ParseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "yes", "on", "true":
		return true, nil
	case "0", "no", "off", "false", "":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean", s)
}

// SplitList splits PVE's list strings (comma, semicolon or space separated).
func SplitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\n' })
}

// String renders a JSON scalar as PVE would print it (1 not 1.0, 0/1 for
// booleans).
func String(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		if x {
			return "1"
		}
		return "0"
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case json.Number:
		return x.String()
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = String(e)
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v)
}
