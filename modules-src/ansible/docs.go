package ansible

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Documentation for a Go module is generated from its Module value, so the
// spec that validates arguments and the docs users read cannot disagree.
// The YAML is written by hand in block style with JSON-quoted scalars
// (valid YAML that PyYAML reads), which keeps this package free of a YAML
// dependency.

// yamlMap is an ordered YAML mapping.
type yamlMap []yamlKV

type yamlKV struct {
	key   string
	value any
}

func (m *yamlMap) set(key string, value any) { *m = append(*m, yamlKV{key, value}) }

func writeYAML(b *bytes.Buffer, v any, indent int) {
	pad := strings.Repeat("  ", indent)
	switch x := v.(type) {
	case yamlMap:
		for _, kv := range x {
			b.WriteString(pad + kv.key + ":")
			writeYAMLValue(b, kv.value, indent)
		}
	default:
		panic(fmt.Sprintf("writeYAML: top level must be a mapping, got %T", v))
	}
}

func writeYAMLValue(b *bytes.Buffer, v any, indent int) {
	pad := strings.Repeat("  ", indent)
	switch x := v.(type) {
	case yamlMap:
		if len(x) == 0 {
			b.WriteString(" {}\n")
			return
		}
		b.WriteString("\n")
		writeYAML(b, x, indent+1)
	case []any:
		if len(x) == 0 {
			b.WriteString(" []\n")
			return
		}
		b.WriteString("\n")
		for _, e := range x {
			b.WriteString(pad + "  -")
			if m, ok := e.(yamlMap); ok && len(m) > 0 {
				// A mapping as a list item: the first key on the dash line.
				var inner bytes.Buffer
				writeYAML(&inner, m, indent+2)
				b.WriteString(" " + strings.TrimLeft(inner.String(), " "))
				continue
			}
			writeYAMLValue(b, e, indent+1)
		}
	case []string:
		items := make([]any, len(x))
		for i, s := range x {
			items[i] = s
		}
		writeYAMLValue(b, items, indent)
	default:
		b.WriteString(" " + yamlScalar(x) + "\n")
	}
}

func yamlScalar(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(normalizeValue(v)); err != nil {
		panic(fmt.Sprintf("documentation value %v cannot be encoded: %v", v, err))
	}
	return strings.TrimRight(buf.String(), "\n")
}

// Documentation returns the module's DOCUMENTATION YAML.
func (m *Module) Documentation() string {
	var doc yamlMap
	doc.set("module", m.Name)
	doc.set("short_description", m.ShortDescription)
	doc.set("description", stringsAny(m.Description))
	doc.set("author", []any{Author})
	spec := m.fullSpec()
	if len(spec.Fragments) > 0 {
		refs := make([]any, len(spec.Fragments))
		for i, f := range spec.Fragments {
			refs[i] = f.Ref()
		}
		doc.set("extends_documentation_fragment", refs)
	}
	if own := ownOptions(spec); len(own) > 0 {
		doc.set("options", optionsDoc(own))
	}
	var attrs yamlMap
	attrs.set("check_mode", yamlMap{
		{"support", "full"},
		{"description", "Can run in check_mode and return changed status prediction without modifying target; the prediction comes from the same plan a real run applies."},
	})
	attrs.set("diff_mode", yamlMap{
		{"support", "full"},
		{"description", "Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode."},
	})
	attrs.set("platform", yamlMap{
		{"support", "full"},
		{"platforms", "posix"},
		{"description", "Target OS/families that can be operated against."},
	})
	if len(m.ActionGroups) > 0 {
		groups := make([]string, len(m.ActionGroups))
		for i, g := range m.ActionGroups {
			groups[i] = "C(group/" + g + ")"
		}
		attrs.set("action_group", yamlMap{
			{"support", "full"},
			{"membership", stringsAny(m.ActionGroups)},
			{"description", "Use " + strings.Join(groups, " or ") + " in C(module_defaults) to set defaults for this module."},
		})
	}
	doc.set("attributes", attrs)
	notes := append([]string(nil), m.Notes...)
	notes = append(notes,
		"The module is a compiled Go program run by the collection's action plugin; no Python is needed on the target except for C(async).",
		"The task reports C(changed) only after reading back the state it promised; C(changes) lists what was (or in check mode would be) done.")
	doc.set("notes", stringsAny(notes))
	if len(m.Requirements) > 0 {
		doc.set("requirements", stringsAny(m.Requirements))
	}
	var b bytes.Buffer
	writeYAML(&b, doc, 0)
	return b.String()
}

// Options returns the top-level option names, sorted, the runtime's own
// (timeout) included.
func (m *Module) Options() []string { return sortedKeys(m.fullSpec().Options) }

func optionsDoc(opts map[string]Option) yamlMap {
	var out yamlMap
	for _, name := range sortedKeys(opts) {
		o := opts[name]
		var d yamlMap
		desc := append([]string(nil), o.Description...)
		if len(o.EnvFallback) > 0 {
			vars := make([]string, len(o.EnvFallback))
			for i, v := range o.EnvFallback {
				vars[i] = "C(" + v + ")"
			}
			desc = append(desc, "If not set, the value of the environment variable "+strings.Join(vars, ", then ")+" is used.")
		}
		if o.NoLog {
			desc = append(desc, "This value is secret: it is masked in results and logs (no_log).")
		}
		d.set("description", stringsAny(desc))
		t := o.Type
		if t == "" {
			t = TypeStr
		}
		d.set("type", string(t))
		if o.Elements != "" {
			d.set("elements", string(o.Elements))
		}
		if o.Required {
			d.set("required", true)
		}
		if o.Default != nil {
			d.set("default", normalizeValue(o.Default))
		}
		if o.Choices != nil {
			d.set("choices", normalizeValue(o.Choices))
		}
		if len(o.Aliases) > 0 {
			d.set("aliases", stringsAny(o.Aliases))
		}
		if len(o.Options) > 0 {
			d.set("suboptions", optionsDoc(o.Options))
		}
		out.set(name, d)
	}
	return out
}

func stringsAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// ReturnDoc returns the RETURN YAML: the `changes` key every module has,
// followed by the module's own Return text.
func (m *Module) ReturnDoc() string {
	var doc yamlMap
	doc.set("changes", yamlMap{
		{"description", []any{"Summaries of the changes made (or, in check mode, planned), in order. Empty when nothing needed to change.",
			"A change counts as made once it was started, even if it then failed, unless it left nothing behind; C(changed) is true exactly when this list is not empty."}},
		{"returned", "always"},
		{"type", "list"},
		{"elements", "str"},
		{"sample", []any{"enable pve-no-subscription repository"}},
	})
	for _, k := range []struct{ key, what string }{
		{"changes_verified", "Changes made and read back as promised."},
		{"changes_unverified", "Changes started (so possibly partly or wholly made) but not read back as promised: the step that failed, or one whose check failed."},
		{"changes_not_run", "Changes planned but not made: never started because an earlier one failed, or started and undone completely. Changes later stages would have planned are not known and not listed."},
	} {
		doc.set(k.key, yamlMap{
			{"description", []any{k.what}},
			{"returned", "failure (not in check mode)"},
			{"type", "list"},
			{"elements", "str"},
		})
	}
	if m.CreatedEarlier {
		doc.set("not_yet", yamlMap{
			{"description", []any{"Check mode only: the prerequisites (a node, a storage, a pool, a template or guest) that do not exist yet and that the prediction assumes an earlier task of the same run creates, because created_earlier names them, each with the option naming it; a real run fails (or says what it does instead) unless they exist by then. A warning says the same. A missing prerequisite created_earlier does not name is not assumed: the check run fails as the real run does."}},
			{"returned", "check mode, when a prerequisite was assumed"},
			{"type", "list"},
			{"elements", "dict"},
			{"sample", []any{yamlMap{{"option", "storage"}, {"object", "storage nvme-vm"}}}},
		})
	}
	var b bytes.Buffer
	writeYAML(&b, doc, 0)
	if r := strings.TrimSpace(m.Return); r != "" {
		b.WriteString(r + "\n")
	}
	return b.String()
}

// ExamplesDoc returns the EXAMPLES YAML.
func (m *Module) ExamplesDoc() string {
	return strings.TrimSpace(m.Examples) + "\n"
}

// Author is every module's author, in the "Name (@github)" form
// ansible-test's validate-modules asks.
const Author = "gopve.proxmox developers (@gopve)"

// pythonHeader opens every generated Python file.
const pythonHeader = `# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
`

// pythonBoilerplate is what ansible-test sanity's future-import-boilerplate
// and metaclass-boilerplate checks ask of modules and doc fragments
// (ansible-core 2.14; the files have no classes or divisions that need it,
// but Galaxy runs those checks).
const pythonBoilerplate = `from __future__ import absolute_import, division, print_function
__metaclass__ = type`

// DocPlugin renders plugins/modules/<name>.py: documentation only, since
// the module itself is the Go binary the action plugin runs. Only
// assignments, as ansible-test sanity's import and validate-modules checks
// accept of a docs-only module (ansible.builtin's action-only modules, such
// as debug, look the same): no code of its own to run.
func (m *Module) DocPlugin() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("#!/usr/bin/python\n")
	b.WriteString(pythonHeader)
	b.WriteString("# Generated by `gopve gen-plugins` from the Go module spec; do not edit.\n")
	b.WriteString("# The module is the Go binary run by plugins/action/" + m.Name + ".py; this file only documents it.\n\n")
	b.WriteString(pythonBoilerplate + "\n\n")
	for i, part := range []struct{ name, text string }{
		{"DOCUMENTATION", m.Documentation()},
		{"EXAMPLES", m.ExamplesDoc()},
		{"RETURN", m.ReturnDoc()},
	} {
		if strings.Contains(part.text, `"""`) {
			return nil, fmt.Errorf("module %s: %s contains \"\"\", which cannot go in a Python raw string", m.Name, part.name)
		}
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s = r\"\"\"\n%s\"\"\"\n", part.name, part.text)
	}
	return b.Bytes(), nil
}

// ActionPlugin renders plugins/action/<name>.py, the one-line subclass of
// the collection's shared action base.
func (m *Module) ActionPlugin() []byte {
	return []byte(`# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# Generated by ` + "`gopve gen-plugins`" + `; do not edit.
from __future__ import annotations
from ansible_collections.gopve.proxmox.plugins.plugin_utils.gopve_action import GoModuleAction


class ActionModule(GoModuleAction):
    gopve_module = "` + m.Name + `"
`)
}
