package testenv

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// childEnv selects what the child tests below do; unset (a normal run)
// they return at once: they exist to be run by TestSwitch.
const childEnv = "GOPVE_TESTENV_CHILD"

func TestChildSkip(t *testing.T) {
	if os.Getenv(childEnv) != "skip" {
		return
	}
	NeedTools(t, "gopve-no-such-tool")
	t.Fatal("NeedTools returned although the tool is missing")
}

func TestChildScript(t *testing.T) {
	if os.Getenv(childEnv) != "script" {
		return
	}
	Script(t, testscript.Params{Dir: "testdata"})
}

// TestSwitch runs a test that lacks a tool, and a testscript script that
// lacks one, in a child `go test` process: without the switch they are
// skipped (exit 0, SKIP), with GOPVE_REQUIRE_LAB=1 they fail naming the
// missing tool.
func TestSwitch(t *testing.T) {
	for _, child := range []string{"skip", "script"} {
		for _, required := range []bool{false, true} {
			name := child + "/switch-unset"
			if required {
				name = child + "/switch-set"
			}
			t.Run(name, func(t *testing.T) {
				run := "^TestChildSkip$"
				if child == "script" {
					run = "^TestChildScript$"
				}
				cmd := exec.Command(os.Args[0], "-test.run="+run, "-test.v", "-test.count=1")
				cmd.Env = append(withoutSwitch(os.Environ()), childEnv+"="+child)
				if required {
					cmd.Env = append(cmd.Env, Switch+"=1")
				}
				out, err := cmd.CombinedOutput()
				var exit *exec.ExitError
				if err != nil && !errors.As(err, &exit) {
					t.Fatalf("cannot run the child test: %v", err)
				}
				if !strings.Contains(string(out), "gopve-no-such-tool") {
					t.Errorf("the output does not name the missing tool:\n%s", out)
				}
				switch {
				case required && (err == nil || !strings.Contains(string(out), "--- FAIL") || !strings.Contains(string(out), Switch)):
					t.Errorf("with %s=1 the child must fail naming the switch; err=%v, output:\n%s", Switch, err, out)
				case !required && (err != nil || !strings.Contains(string(out), "--- SKIP")):
					t.Errorf("without %s the child must be skipped; err=%v, output:\n%s", Switch, err, out)
				}
			})
		}
	}
}

func withoutSwitch(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, Switch+"=") && !strings.HasPrefix(kv, childEnv+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// allowMarker, on the line of a direct t.Skip, says why that skip is not
// about a missing environment (and so may pass in CI).
const allowMarker = "testenv: not an environment skip"

var (
	directSkip  = regexp.MustCompile(`(\w+)\.Skip(f|Now)?\(`)
	directRun   = regexp.MustCompile(`testscript\.Run(T)?\(`)
	scriptStop  = regexp.MustCompile(`^\s*(\[[^\]]*\]\s*)+stop\b`)
	thisPackage = filepath.Join("internal", "testenv")
)

// skipsDirectly reports whether line calls X.Skip, X.Skipf or X.SkipNow
// for an X other than this package.
func skipsDirectly(line string) bool {
	for _, m := range directSkip.FindAllStringSubmatch(line, -1) {
		if m[1] != "testenv" {
			return true
		}
	}
	return false
}

// TestEverySkipGoesThroughTestenv keeps the switch whole: a direct t.Skip,
// a testscript run that bypasses Script, or a script's conditional `stop`
// (which ends a script green) anywhere in modules-src would let CI pass
// by not testing.
func TestEverySkipGoesThroughTestenv(t *testing.T) {
	root := filepath.Join("..", "..")
	var checked int
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel == thisPackage {
				return filepath.SkipDir
			}
			return nil
		}
		isGo := strings.HasSuffix(path, ".go")
		isScript := strings.HasSuffix(path, ".txtar") || (strings.HasSuffix(path, ".txt") && strings.Contains(path, "testdata"))
		if !isGo && !isScript {
			return nil
		}
		checked++
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			switch {
			case isGo && skipsDirectly(line) && !strings.Contains(line, allowMarker):
				t.Errorf("%s:%d: a direct skip; use testenv.Skip/NeedRoot/NeedTools/NeedLong (or mark it %q with the reason): %s", rel, n, allowMarker, strings.TrimSpace(line))
			case isGo && directRun.MatchString(line):
				t.Errorf("%s:%d: testscript run directly; use testenv.Script so its skips obey %s: %s", rel, n, Switch, strings.TrimSpace(line))
			case isScript && scriptStop.MatchString(line):
				t.Errorf("%s:%d: a conditional stop ends the script green; use skip (it fails under %s): %s", rel, n, Switch, strings.TrimSpace(line))
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("only %d files checked under %s: wrong root?", checked, root)
	}
}
