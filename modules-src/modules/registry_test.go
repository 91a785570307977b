package modules

import (
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
