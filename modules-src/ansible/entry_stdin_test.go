package ansible

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
)

// runChildStdin runs the entry point in a child process as the action
// plugin's fast path does: `<binary> -` with the arguments on stdin.
func runChildStdin(t *testing.T, argv0, stdin string) childRun {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GOPVE_ENTRY_HELPER=1", "GOPVE_ENTRY_ARGV0="+argv0, "GOPVE_ENTRY_ARGS="+ArgsFromStdin)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return childRun{stdout.String(), stderr.String(), code, mustOneObject(t, stdout.Bytes())}
}

// Arguments on stdin go through exactly the validation of an args file:
// same result for the same bytes, whichever way they arrive.
func TestArgsOnStdinMatchArgsFile(t *testing.T) {
	testenv.NeedLong(t, "starts child processes")
	cases := map[string]string{
		"2.14 shape":          args214,
		"2.21 shape":          args221,
		"validation error":    `{"_gopve_module": "echo", "count": "x", "secret": "hidden-value", "name": "hidden-value"}`,
		"not JSON":            `name=x`,
		"not an object":       `["echo"]`,
		"empty stdin":         ``,
		"unknown module name": `{"_gopve_module": "pve_nope"}`,
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fromFile := runChild(t, "/x/gopve", args)
			fromStdin := runChildStdin(t, "/x/gopve", args)
			if fromStdin.stdout != fromFile.stdout || fromStdin.code != fromFile.code {
				t.Errorf("stdin: code %d %s\nfile:  code %d %s", fromStdin.code, fromStdin.stdout, fromFile.code, fromFile.stdout)
			}
			if strings.Contains(fromStdin.stdout, "hidden-value") {
				t.Errorf("secret on stdout: %s", fromStdin.stdout)
			}
		})
	}
}

func TestArgsOnStdinRunTheModule(t *testing.T) {
	testenv.NeedLong(t, "starts child processes")
	got := runChildStdin(t, "/x/gopve", `{"_gopve_module": "echo", "name": "from stdin", "count": "3", "_ansible_check_mode": true}`)
	if got.code != 0 {
		t.Fatalf("exit code %d: %s %s", got.code, got.stdout, got.stderr)
	}
	params, _ := got.result["params"].(map[string]any)
	if params["name"] != "from stdin" || params["count"] != float64(3) || got.result["check_mode"] != true {
		t.Errorf("module saw %v", got.result)
	}
}

func TestReadArgs(t *testing.T) {
	data, err := readArgs(ArgsFromStdin, strings.NewReader(`{"a": 1}`))
	if err != nil || string(data) != `{"a": 1}` {
		t.Errorf("stdin: %q, %v", data, err)
	}
	// Any other name is a file; stdin is not touched.
	path := writeTemp(t, `{"b": 2}`)
	if data, err := readArgs(path, strings.NewReader("ignored")); err != nil || string(data) != `{"b": 2}` {
		t.Errorf("file: %q, %v", data, err)
	}
	if _, err := readArgs(path+".missing", nil); err == nil || !strings.Contains(err.Error(), "cannot read the args file") {
		t.Errorf("missing file: %v", err)
	}
}
