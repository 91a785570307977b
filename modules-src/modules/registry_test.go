package modules

import (
	"strings"
	"testing"
)

// Every registered module must pass the definition checks, have a unique
// name and render its documentation.
func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range All() {
		if seen[m.Name] {
			t.Errorf("module %s registered twice", m.Name)
		}
		seen[m.Name] = true
		if err := m.Check(); err != nil {
			t.Errorf("module %s: %v", m.Name, err)
		}
		if _, err := m.DocPlugin(); err != nil {
			t.Errorf("module %s: %v", m.Name, err)
		}
	}
	for _, m := range Shipped() {
		if m.Name == "gopve_test" {
			t.Errorf("the test module must not ship")
		}
	}
}

// TestParamsMatchSpec: every shipped module declares the struct it decodes
// into (Module.Params), and that struct matches its spec both ways — an
// option without a field would be validated and then ignored, a field
// without an option could never be set (Module.Check reports both).
func TestParamsMatchSpec(t *testing.T) {
	for _, m := range Shipped() {
		if m.Params == nil {
			t.Errorf("module %s: Params is not set", m.Name)
			continue
		}
		if err := m.Check(); err != nil && strings.Contains(err.Error(), "does not match the spec") {
			t.Errorf("module %s: %v", m.Name, err)
		}
	}
}
