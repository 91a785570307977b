package qemu

import (
	"fmt"
	"strconv"

	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
)

// take moves the modeled keys out of a parsed property string; what is
// left goes to a type's Other.
type take struct {
	props pveformat.Props
	name  string // "net0", for errors
	err   error
}

func (t *take) str(key string) string {
	v, _ := t.props.Get(key)
	t.props.Del(key)
	return v
}

func (t *take) boolPtr(key string) *bool {
	v, ok := t.props.Get(key)
	if !ok {
		return nil
	}
	t.props.Del(key)
	b := v == "1"
	if v != "0" && v != "1" && t.err == nil {
		t.err = fmt.Errorf("%s: %s=%q is not a boolean", t.name, key, v)
	}
	return &b
}

func (t *take) intPtr(key string) *int {
	v, ok := t.props.Get(key)
	if !ok {
		return nil
	}
	t.props.Del(key)
	n, err := strconv.Atoi(v)
	if err != nil && t.err == nil {
		t.err = fmt.Errorf("%s: %s=%q is not an integer", t.name, key, v)
	}
	return &n
}

func (t *take) floatPtr(key string) *float64 {
	v, ok := t.props.Get(key)
	if !ok {
		return nil
	}
	t.props.Del(key)
	n, err := strconv.ParseFloat(v, 64)
	if err != nil && t.err == nil {
		t.err = fmt.Errorf("%s: %s=%q is not a number", t.name, key, v)
	}
	return &n
}

// rest is what no field took, nil when nothing is left.
func (t *take) rest() pveformat.Props {
	if len(t.props) == 0 {
		return nil
	}
	return t.props
}

// put builds a property string from modeled fields, then Other.
type put struct{ props pveformat.Props }

func (p *put) str(key, v string) {
	if v != "" {
		p.props = append(p.props, pveformat.KV{Key: key, Value: v})
	}
}

func (p *put) boolPtr(key string, v *bool) {
	if v != nil {
		s := "0"
		if *v {
			s = "1"
		}
		p.str(key, s)
	}
}

func (p *put) intPtr(key string, v *int) {
	if v != nil {
		p.str(key, strconv.Itoa(*v))
	}
}

func (p *put) floatPtr(key string, v *float64) {
	if v != nil {
		p.str(key, strconv.FormatFloat(*v, 'f', -1, 64))
	}
}

func (p *put) other(o pveformat.Props) {
	for _, kv := range o {
		if _, dup := p.props.Get(kv.Key); !dup {
			p.props = append(p.props, kv)
		}
	}
}

// Ptr returns a pointer to v, for the optional fields of the typed values.
func Ptr[T any](v T) *T { return &v }
