// Command gopve is the collection's multi-call binary: every module of
// gopve.proxmox in one program per platform.
//
// Ansible runs it as `gopve <args file>`; the module comes from the
// `_gopve_module` key the action plugin puts in the args file, or from the
// name the binary was called by (a symlink named after a module).
//
// For humans:
//
//	gopve version                  the collection version baked into the binary
//	gopve list                     the modules this binary provides
//	gopve docs NAME                a module's DOCUMENTATION YAML
//	gopve gen-plugins --out DIR [--module NAME]...
//	                               write DIR/plugins/{modules,action}/<name>.py
package main

import (
	"os"

	"github.com/gopve/proxmox/modules-src/modules"
)

func main() {
	os.Exit(run(os.Args, modules.All(), os.Stdout, os.Stderr))
}
