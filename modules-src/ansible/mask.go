package ansible

import (
	"sort"
	"strings"
	"sync"
)

// noLogPlaceholder replaces a value that is exactly a secret (and numbers
// containing one), as in AnsibleModule's remove_values.
const noLogPlaceholder = "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"

// secretMask replaces a secret found inside a longer string.
const secretMask = "********"

// secretSet holds the strings that must never leave the process.
type secretSet struct {
	mu     sync.Mutex
	values map[string]struct{}
}

func newSecretSet() *secretSet { return &secretSet{values: map[string]struct{}{}} }

func (s *secretSet) add(v string) {
	if v == "" {
		return // an empty secret would mask between every character
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.values[v] = struct{}{}
}

// list returns the secrets longest first, so that a secret containing
// another one is masked whole.
func (s *secretSet) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.values))
	for v := range s.values {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}

// maskString masks every occurrence of a secret in free text (logs,
// messages): never the placeholder, always the stars.
func (s *secretSet) maskString(text string) string {
	for _, secret := range s.list() {
		text = strings.ReplaceAll(text, secret, secretMask)
	}
	return text
}

// maskValue is remove_values: a string equal to a secret becomes the
// placeholder, a string containing one gets it starred out, a number whose
// text is or contains a secret becomes the placeholder; containers are
// walked. Unlike Python it also masks map keys (outside protected), so a
// secret used as a key does not leak either.
func maskValue(v any, secrets []string, protectedKeys map[string]bool) any {
	if len(secrets) == 0 {
		return v
	}
	switch x := v.(type) {
	case string:
		for _, s := range secrets {
			if x == s {
				return noLogPlaceholder
			}
		}
		for _, s := range secrets {
			x = strings.ReplaceAll(x, s, secretMask)
		}
		return x
	case int, float64:
		text := pyStr(x)
		for _, s := range secrets {
			if strings.Contains(text, s) {
				return noLogPlaceholder
			}
		}
		return x
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = maskValue(e, secrets, nil)
		}
		return out
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = maskValue(e, secrets, nil)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			key := k
			if !protectedKeys[k] {
				for _, s := range secrets {
					key = strings.ReplaceAll(key, s, secretMask)
				}
			}
			out[key] = maskValue(e, secrets, nil)
		}
		return out
	}
	return v
}
