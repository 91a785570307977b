// Package modules is the registry of gopve modules: an explicit list, so
// that what the binary provides is visible in one place (no init() magic).
package modules

import (
	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/modules/pveaccess"
	"github.com/gopve/proxmox/modules-src/modules/pvebase"
	"github.com/gopve/proxmox/modules-src/modules/pveclone"
	"github.com/gopve/proxmox/modules-src/modules/pvecluster"
	"github.com/gopve/proxmox/modules-src/modules/pvecontainer"
	"github.com/gopve/proxmox/modules-src/modules/pveha"
	"github.com/gopve/proxmox/modules-src/modules/pvestorage"
	"github.com/gopve/proxmox/modules-src/modules/pvezfs"
)

// Shipped returns the modules of the released collection, in the order
// `gopve list` shows them. To add a module, append its constructor here and
// regenerate the plugins (go run ./modules-src/cmd/gopve gen-plugins --out .).
func Shipped() []ansible.Module {
	return []ansible.Module{
		// pvebase.Module(), pvezfs.Module(), … are added here by their authors.
		pvebase.Module(),
		pvezfs.Module(),
		pvecluster.Module(),
		pvestorage.Module(),
		pveclone.Module(),
		pvecontainer.Module(),
		pveha.Module(),
		pveaccess.Module(),
	}
}

// All returns the shipped modules plus, in binaries built with the tag
// gopve_testmodule, the test-only module gopve_test.
func All() []ansible.Module {
	return append(Shipped(), testModules()...)
}
