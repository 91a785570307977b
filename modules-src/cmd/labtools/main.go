// Command labtools is the multi-call binary of the lab's PVE/ZFS stand-ins:
// installed as zpool, zfs, systemctl, update-initramfs, pvecm, pvesm and pvesh
// in every lab node, it acts as the tool it is called as. `labtools NAME ARGS`
// works too; `labtools --list` prints the names to link.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/tools"
	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
)

func main() { os.Exit(run(os.Args)) }

func run(argv []string) int {
	env := cli.OS()
	env.Args = argv[1:]
	name := filepath.Base(argv[0])
	if name == "labtools" {
		if len(argv) < 2 {
			fmt.Fprintf(os.Stderr, "usage: labtools NAME [ARGS...] | --list\nNAME is one of: %s\n", strings.Join(tools.Names(), ", "))
			return 2
		}
		if argv[1] == "--list" {
			fmt.Println(strings.Join(tools.Names(), "\n"))
			return 0
		}
		name, env.Args = argv[1], argv[2:]
	}
	code, ok := tools.Run(name, env)
	if !ok {
		fmt.Fprintf(os.Stderr, "labtools: unknown tool %q (known: %s)\n", name, strings.Join(tools.Names(), ", "))
		return 2
	}
	return code
}
