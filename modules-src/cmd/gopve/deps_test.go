package main

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
)

// TestShippedBinaryImportsNoLab: the binary that ships (and the test-module
// build the integration tests install) links nothing from the simulated lab
// nor any test helper, on every shipped platform: the lab is a test fixture,
// not code that may run on a user's node (docs/contracts.md, Layout).
func TestShippedBinaryImportsNoLab(t *testing.T) {
	testenv.NeedTools(t, "go")
	const self = "github.com/gopve/proxmox/modules-src/cmd/gopve"
	forbidden := []string{
		"github.com/gopve/proxmox/modules-src/lab",
		"github.com/gopve/proxmox/modules-src/internal/testenv",
		"github.com/rogpeppe/go-internal",
		"testing",
	}
	for _, goos := range []string{"linux", "darwin"} {
		for _, tags := range []string{"", "gopve_testmodule"} {
			t.Run(goos+"/tags="+tags, func(t *testing.T) {
				cmd := exec.Command("go", "list", "-deps", "-tags="+tags, self)
				cmd.Dir = repoRoot(t)
				cmd.Env = append(os.Environ(), "GOOS="+goos, "CGO_ENABLED=0")
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("go list -deps: %v\n%s", err, stderrOf(err))
				}
				deps := strings.Fields(string(out))
				// The list must be the real one, or the check below proves nothing.
				for _, want := range []string{self, "github.com/gopve/proxmox/modules-src/modules/pvebase", "github.com/gopve/proxmox/modules-src/ansible"} {
					if !slices.Contains(deps, want) {
						t.Fatalf("go list -deps lacks %s: not the binary's dependency list?\n%s", want, out)
					}
				}
				if tags == "gopve_testmodule" && !slices.Contains(deps, "github.com/gopve/proxmox/modules-src/modules/gopvetest") {
					t.Fatalf("with -tags gopve_testmodule the test module is missing from the dependencies")
				}
				for _, d := range deps {
					for _, f := range forbidden {
						if d == f || strings.HasPrefix(d, f+"/") {
							t.Errorf("the shipped binary imports %s (under %s)", d, f)
						}
					}
				}
			})
		}
	}
}

func stderrOf(err error) string {
	var e *exec.ExitError
	if errors.As(err, &e) {
		return string(e.Stderr)
	}
	return ""
}
