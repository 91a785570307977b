//go:build gopve_testmodule

package modules

import (
	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/modules/gopvetest"
)

// testModules: this binary is built for the integration tests.
func testModules() []ansible.Module { return []ansible.Module{gopvetest.Module()} }
