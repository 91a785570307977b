package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/renameio/v2"

	"github.com/gopve/proxmox/modules-src/ansible"
)

const usage = `gopve — the Go modules of the gopve.proxmox Ansible collection

Ansible runs this binary as "gopve <args file>" (or "gopve -", arguments on
stdin: the action plugin's fast path). Commands for humans:
  gopve version                                   print the collection version
  gopve list                                      list the modules in this binary
  gopve docs NAME                                 print a module's DOCUMENTATION YAML
  gopve gen-plugins --out DIR [--module NAME]...  write DIR/plugins/{modules,action}/NAME.py
                                                  and the doc_fragments they extend
`

// run dispatches between the human commands and module mode. A binary
// called by a module's name (symlink) is always in module mode, and so is
// any first argument that is not a command name (Ansible passes a path).
func run(argv []string, mods []ansible.Module, stdout, stderr io.Writer) int {
	calledAsModule := false
	base := strings.TrimPrefix(filepath.Base(argv[0]), "AnsiballZ_")
	for _, m := range mods {
		if m.Name == base {
			calledAsModule = true
		}
	}
	if !calledAsModule && len(argv) >= 2 {
		switch argv[1] {
		case "version", "--version":
			fmt.Fprintln(stdout, ansible.Version)
			return 0
		case "list":
			for _, m := range mods {
				fmt.Fprintf(stdout, "%-16s %s\n", m.Name, m.ShortDescription)
			}
			return 0
		case "docs":
			return docsCmd(argv[2:], mods, stdout, stderr)
		case "gen-plugins":
			return genPluginsCmd(argv[2:], mods, stdout, stderr)
		case "help", "-h", "--help":
			fmt.Fprint(stdout, usage)
			return 0
		}
	}
	return ansible.Main(mods, argv)
}

func findModule(mods []ansible.Module, name string) (*ansible.Module, error) {
	var names []string
	for i := range mods {
		if mods[i].Name == name {
			return &mods[i], nil
		}
		names = append(names, mods[i].Name)
	}
	return nil, fmt.Errorf("no module %q in this binary (it has: %s)", name, strings.Join(names, ", "))
}

func docsCmd(args []string, mods []ansible.Module, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprint(stderr, "usage: gopve docs NAME\n")
		return 2
	}
	m, err := findModule(mods, args[0])
	if err != nil {
		fmt.Fprintln(stderr, "gopve docs:", err)
		return 1
	}
	fmt.Fprint(stdout, m.Documentation())
	return 0
}

type multiFlag []string

func (f *multiFlag) String() string     { return strings.Join(*f, ",") }
func (f *multiFlag) Set(v string) error { *f = append(*f, v); return nil }

func genPluginsCmd(args []string, mods []ansible.Module, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gen-plugins", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "collection root to write plugins/ into (required)")
	var only multiFlag
	fs.Var(&only, "module", "generate only this module (repeatable); default: every module")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *out == "" || fs.NArg() > 0 {
		fmt.Fprint(stderr, "usage: gopve gen-plugins --out DIR [--module NAME]...\n")
		return 2
	}
	selected := mods
	if len(only) > 0 {
		selected = nil
		for _, name := range only {
			m, err := findModule(mods, name)
			if err != nil {
				fmt.Fprintln(stderr, "gopve gen-plugins:", err)
				return 1
			}
			selected = append(selected, *m)
		}
	}
	files, err := pluginFiles(selected)
	if err != nil {
		fmt.Fprintln(stderr, "gopve gen-plugins:", err)
		return 1
	}
	for _, f := range files {
		path := filepath.Join(*out, f.path)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, f.data) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			fmt.Fprintln(stderr, "gopve gen-plugins:", err)
			return 1
		}
		if err := renameio.WriteFile(path, f.data, 0o644); err != nil {
			fmt.Fprintln(stderr, "gopve gen-plugins:", err)
			return 1
		}
		fmt.Fprintln(stdout, "wrote", path)
	}
	return 0
}

type pluginFile struct {
	path string // relative to the collection root
	data []byte
}

// pluginFiles renders the two Python files of each module, then the doc
// fragments their docs extend, each once.
func pluginFiles(mods []ansible.Module) ([]pluginFile, error) {
	var files []pluginFile
	fragments := map[string][]byte{}
	var order []string
	for i := range mods {
		m := &mods[i]
		doc, err := m.DocPlugin()
		if err != nil {
			return nil, err
		}
		files = append(files,
			pluginFile{filepath.Join("plugins", "modules", m.Name+".py"), doc},
			pluginFile{filepath.Join("plugins", "action", m.Name+".py"), m.ActionPlugin()},
		)
		for _, f := range m.DocFragments() {
			data, err := f.Plugin()
			if err != nil {
				return nil, err
			}
			if old, seen := fragments[f.Name]; seen {
				if !bytes.Equal(old, data) {
					return nil, fmt.Errorf("doc fragment %s: module %s documents it differently from an earlier module", f.Name, m.Name)
				}
				continue
			}
			fragments[f.Name] = data
			order = append(order, f.Name)
		}
	}
	for _, name := range order {
		files = append(files, pluginFile{filepath.Join("plugins", "doc_fragments", name+".py"), fragments[name]})
	}
	return files, nil
}
