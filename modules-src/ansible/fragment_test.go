package ansible

import (
	"strings"
	"testing"
)

func fragmentModule(frag DocFragment, opts map[string]Option) Module {
	return Module{Name: "pve_frag", ShortDescription: "x", Description: []string{"x"}, Examples: "- x: {}\n",
		Params: struct {
			Host string `ansible:"api_host"`
			Name string `ansible:"name"`
		}{}, Run: func(*Run) error { return nil },
		Spec: Spec{Options: opts, Fragments: []DocFragment{frag}}}
}

// A module extending a doc fragment documents only its own options and
// names the fragment; the fragment file documents the shared ones.
func TestDocFragmentDocs(t *testing.T) {
	host := Option{Description: []string{"The API host."}, EnvFallback: []string{"PROXMOX_HOST"}}
	frag := DocFragment{Name: "api", What: "shared", Options: map[string]Option{"api_host": host}}
	m := fragmentModule(frag, map[string]Option{"api_host": host, "name": {Description: []string{"A name."}}})
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	doc := m.Documentation()
	if !strings.Contains(doc, "extends_documentation_fragment:\n  - \"gopve.proxmox.api\"\n") ||
		strings.Contains(doc, "api_host") || !strings.Contains(doc, "  name:\n") {
		t.Errorf("module docs:\n%s", doc)
	}
	py, err := frag.Plugin()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"class ModuleDocFragment(object):\n    DOCUMENTATION = r\"\"\"\noptions:\n  api_host:\n",
		"C(PROXMOX_HOST)", "__metaclass__ = type\n"} {
		if !strings.Contains(string(py), want) {
			t.Errorf("fragment lacks %q:\n%s", want, py)
		}
	}
}

// A fragment option the module declares otherwise (or lacks) would show
// the fragment's text for an option that behaves differently: Check fails.
func TestDocFragmentMustMatchSpec(t *testing.T) {
	frag := DocFragment{Name: "api", Options: map[string]Option{"api_host": {Description: []string{"The API host."}}}}
	for name, opts := range map[string]map[string]Option{
		"differs": {"api_host": {Description: []string{"Another text."}}, "name": {Description: []string{"A name."}}},
		"missing": {"name": {Description: []string{"A name."}}},
	} {
		m := fragmentModule(frag, opts)
		if err := m.Check(); err == nil || !strings.Contains(err.Error(), "fragment api") {
			t.Errorf("%s: Check = %v", name, err)
		}
	}
}
