package modules

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The role tasks that hand a module a user's dict (a VM, a guest, a
// storage) pass it option by option, each `{{ <dict>['<opt>'] |
// default(omit) }}`, never the dict as the task's args: ansible-core warns
// on every such task ("Using a variable for a task's 'args' is unsafe",
// FAQ argsplat-unsafe) because a host fact could inject an argument. The
// price is a list of options in YAML that must follow the module's spec:
// these tests fail when an option is added to or removed from a module and
// the role is not updated, in either direction.

// passThrough names each role task file that passes a dict through, with
// the module it calls and the task vars entry holding the dict. Listed
// here so a task that stops being checked (renamed, rewritten) fails the
// test instead of silently leaving it.
var passThrough = []struct {
	file, module, dictVar string
}{
	{"roles/pve_clone/tasks/main.yml", "pve_clone", "pve_clone_args"},
	{"roles/pve_clone/tasks/host.yml", "pve_clone", "pve_clone_args"},
	{"roles/pve_container/tasks/main.yml", "pve_container", "pve_ct_args"},
	{"roles/pve_ha/tasks/main.yml", "pve_ha", "pve_ha_args"},
	{"roles/pve_storage/tasks/main.yml", "pve_storage", "pve_storage_args"},
}

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// task is the part of an Ansible task these checks read: its keys in
// order (the module call is one of them) and the raw YAML of each.
type task struct {
	name  string
	keys  map[string]*yaml.Node
	order []string
}

func readTasks(t *testing.T, path string) []task {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.SequenceNode {
		t.Fatalf("%s: not a list of tasks", path)
	}
	var tasks []task
	for _, n := range doc.Content[0].Content {
		if n.Kind != yaml.MappingNode {
			t.Fatalf("%s:%d: a task that is not a mapping", path, n.Line)
		}
		tk := task{keys: map[string]*yaml.Node{}}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			tk.keys[k] = deref(n.Content[i+1])
			tk.order = append(tk.order, k)
		}
		if nm, ok := tk.keys["name"]; ok {
			tk.name = nm.Value
		}
		tasks = append(tasks, tk)
	}
	return tasks
}

// deref follows a YAML alias (*anchor) to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// moduleCall returns the gopve module a task calls and its args node.
func (tk task) moduleCall() (string, *yaml.Node) {
	for _, k := range tk.order {
		if m, ok := strings.CutPrefix(k, "gopve.proxmox."); ok {
			return m, tk.keys[k]
		}
	}
	return "", nil
}

// optionNames are the options a module accepts: its spec's and the ones
// the runtime gives it (the task deadline, created_earlier).
func optionNames(t *testing.T, module string) []string {
	t.Helper()
	for _, m := range Shipped() {
		if m.Name == module {
			names := m.RuntimeOptionNames()
			for n := range m.Spec.Options {
				names = append(names, n)
			}
			slices.Sort(names)
			return names
		}
	}
	t.Fatalf("no shipped module %s", module)
	return nil
}

// mapping returns a YAML mapping's keys in order and their values.
func mapping(n *yaml.Node) ([]string, map[string]*yaml.Node) {
	var keys []string
	vals := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		keys = append(keys, n.Content[i].Value)
		vals[n.Content[i].Value] = deref(n.Content[i+1])
	}
	return keys, vals
}

// diff reports what want has that got lacks and what got has that want
// does not.
func diff(want, got []string) (missing, extra []string) {
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	return missing, extra
}

// TestRoleTasksNameModuleOptions: no role task gives a gopve module its
// args as one template (argsplat), and every option a role task names is
// an option of the module it calls.
func TestRoleTasksNameModuleOptions(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "roles", "*", "tasks", "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no role task files found (%v)", err)
	}
	calls := 0
	for _, f := range files {
		rel, _ := filepath.Rel(repoRoot(t), f)
		for _, tk := range readTasks(t, f) {
			module, args := tk.moduleCall()
			if module == "" {
				continue
			}
			calls++
			if a, ok := tk.keys["args"]; ok && a.Kind != yaml.MappingNode {
				t.Errorf("%s: task %q takes its args from %q (argsplat: a host fact could inject an argument)", rel, tk.name, a.Value)
			}
			if args.Kind != yaml.MappingNode {
				t.Errorf("%s: task %q passes gopve.proxmox.%s its args as %q, not option by option (argsplat: a host fact could inject an argument)", rel, tk.name, module, args.Value)
				continue
			}
			keys, _ := mapping(args)
			if _, extra := diff(optionNames(t, module), keys); len(extra) > 0 {
				t.Errorf("%s: task %q gives gopve.proxmox.%s options it does not have: %s", rel, tk.name, module, strings.Join(extra, ", "))
			}
		}
	}
	if calls < 10 {
		t.Fatalf("found only %d gopve module calls in the roles: the parser is not reading them", calls)
	}
}

// TestRolePassThroughCoversEveryOption: each task of passThrough names
// every option of its module, each as the dict's own value or omitted;
// the role's <role>_module_options list (what its assert accepts) is the
// module's options exactly; and that assert comes before the module call.
func TestRolePassThroughCoversEveryOption(t *testing.T) {
	for _, pt := range passThrough {
		t.Run(pt.file, func(t *testing.T) {
			want := optionNames(t, pt.module)
			tasks := readTasks(t, filepath.Join(repoRoot(t), pt.file))
			assertAt, callAt := -1, -1
			for i, tk := range tasks {
				_, isAssert := tk.keys["ansible.builtin.assert"]
				if vars, ok := tk.keys["vars"]; isAssert && ok && assertAt < 0 && nodeMentions(vars, pt.module+"_module_options") {
					assertAt = i
				}
				module, args := tk.moduleCall()
				if module != pt.module || args.Kind != yaml.MappingNode || !hasKey(tk.keys["vars"], pt.dictVar) {
					continue
				}
				if callAt >= 0 {
					t.Fatalf("two tasks pass %s through; list each in passThrough", pt.dictVar)
				}
				callAt = i
				keys, vals := mapping(args)
				missing, extra := diff(want, keys)
				if len(missing) > 0 {
					t.Errorf("task %q does not pass gopve.proxmox.%s options: %s", tk.name, pt.module, strings.Join(missing, ", "))
				}
				if len(extra) > 0 {
					t.Errorf("task %q passes options gopve.proxmox.%s does not have: %s", tk.name, pt.module, strings.Join(extra, ", "))
				}
				for _, k := range keys {
					got := strings.TrimSpace(vals[k].Value)
					if !passThroughValue(pt.dictVar, k).MatchString(got) {
						t.Errorf("task %q: option %s is %q, want {{ %s['%s'] | default(omit) }}", tk.name, k, got, pt.dictVar, k)
					}
				}
			}
			if callAt < 0 {
				t.Fatalf("no task calls gopve.proxmox.%s with %s in its vars", pt.module, pt.dictVar)
			}
			if assertAt < 0 || assertAt > callAt {
				t.Errorf("no ansible.builtin.assert checking the keys against %s_module_options before the module call", pt.module)
			}
			for i := 0; i < assertAt; i++ {
				if m, _ := tasks[i].moduleCall(); m != "" {
					t.Errorf("task %q calls gopve.proxmox.%s before the keys are checked", tasks[i].name, m)
				}
			}

			role := strings.Split(pt.file, "/")[1]
			listed := roleOptionList(t, role, pt.module)
			missing, extra := diff(want, listed)
			if len(missing) > 0 || len(extra) > 0 {
				t.Errorf("roles/%s/vars/main.yml %s_module_options: missing %v, not options of the module %v", role, pt.module, missing, extra)
			}
		})
	}
}

func passThroughValue(dictVar, opt string) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`^\{\{ %s\['%s'\] \| default\(omit\) \}\}$`, regexp.QuoteMeta(dictVar), regexp.QuoteMeta(opt)))
}

func hasKey(n *yaml.Node, key string) bool {
	if n == nil || n.Kind != yaml.MappingNode {
		return false
	}
	_, vals := mapping(n)
	_, ok := vals[key]
	return ok
}

// nodeMentions: some scalar under n contains s.
func nodeMentions(n *yaml.Node, s string) bool {
	if strings.Contains(n.Value, s) {
		return true
	}
	for _, c := range n.Content {
		if nodeMentions(c, s) {
			return true
		}
	}
	return false
}

func roleOptionList(t *testing.T, role, module string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "roles", role, "vars", "main.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var vars map[string]any
	if err := yaml.Unmarshal(data, &vars); err != nil {
		t.Fatal(err)
	}
	raw, ok := vars[module+"_module_options"].([]any)
	if !ok {
		t.Fatalf("roles/%s/vars/main.yml has no list %s_module_options", role, module)
	}
	var names []string
	for _, v := range raw {
		names = append(names, fmt.Sprint(v))
	}
	return names
}

// The nodes the cluster phase joins in this run are computed once, by one
// rule (the cluster group as far as the play holds it): pve_storage's and
// pve_ha's created_earlier defaults must not drift apart, or a check run's
// storage phase would assume a joiner its HA phase refuses (or predicts
// replication to) — issue 23 §6.
func TestRoleCreatedEarlierNodesOneRule(t *testing.T) {
	root := repoRoot(t)
	nodes := func(file, key string) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		var defaults map[string]any
		if err := yaml.Unmarshal(data, &defaults); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		m, _ := defaults[key].(map[string]any)
		expr, _ := m["nodes"].(string)
		if expr == "" {
			t.Fatalf("%s: %s has no nodes", file, key)
		}
		return strings.Join(strings.Fields(expr), " ")
	}
	storage := nodes("roles/pve_storage/defaults/main.yml", "pve_storage_created_earlier")
	if ha := nodes("roles/pve_ha/defaults/main.yml", "pve_ha_created_earlier"); ha != storage {
		t.Errorf("pve_ha_created_earlier.nodes is %q, pve_storage_created_earlier.nodes %q: one rule, written alike", ha, storage)
	}
}
