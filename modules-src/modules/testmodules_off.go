//go:build !gopve_testmodule

package modules

import "github.com/gopve/proxmox/modules-src/ansible"

// testModules: release binaries carry no test module.
func testModules() []ansible.Module { return nil }
