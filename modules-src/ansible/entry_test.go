package ansible

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The entry point is tested in a real child process (this test binary
// re-executed), because what it guards — file descriptor 1, os.Exit from
// the watchdog — only exists per process.

func helperModules() []Module {
	return []Module{
		{Name: "junk", Run: func(r *Run) error {
			fmt.Println("junk from fmt.Println")
			os.Stdout.WriteString("{\"not\": \"the result\"}\n")
			child := exec.Command("/bin/sh", "-c", "echo junk from a child process")
			child.Stdout = os.Stdout
			if err := child.Run(); err != nil {
				return err
			}
			r.Set("ok", true)
			return nil
		}},
		{Name: "boom", Run: func(r *Run) error {
			fmt.Println("junk before the panic")
			panic("boom on purpose")
		}},
		{Name: "stuck", Timeout: 200 * time.Millisecond, Run: func(r *Run) error {
			r.Step("ignoring the deadline on purpose")
			time.Sleep(30 * time.Second)
			return nil
		}},
		{Name: "echo", Spec: Spec{Options: map[string]Option{
			"name":   {Type: TypeStr, Required: true},
			"count":  {Type: TypeInt},
			"secret": {Type: TypeStr, NoLog: true},
		}}, Run: func(r *Run) error {
			r.Set("params", r.Params())
			r.Set("check_mode", r.CheckMode())
			r.Set("diff_mode", r.DiffMode())
			r.Set("verbosity", r.Verbosity())
			r.Set("ansible_version", r.AnsibleVersion())
			return nil
		}},
	}
}

func TestMain(m *testing.M) {
	if os.Getenv("GOPVE_ENTRY_HELPER") == "1" {
		watchdogGrace = 3 * time.Second // the stuck-module case need not wait the real 15 s
		os.Exit(Main(helperModules(), []string{os.Getenv("GOPVE_ENTRY_ARGV0"), os.Getenv("GOPVE_ENTRY_ARGS")}))
	}
	os.Exit(m.Run())
}

type childRun struct {
	stdout, stderr string
	code           int
	result         map[string]any
}

// runChild runs the entry point in a child process and insists that
// stdout is exactly one JSON object followed by a newline.
func runChild(t *testing.T, argv0 string, args string) childRun {
	t.Helper()
	dir := t.TempDir()
	argsPath := filepath.Join(dir, "args")
	if err := os.WriteFile(argsPath, []byte(args), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GOPVE_ENTRY_HELPER=1", "GOPVE_ENTRY_ARGV0="+argv0, "GOPVE_ENTRY_ARGS="+argsPath)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	res := mustOneObject(t, stdout.Bytes())
	return childRun{stdout.String(), stderr.String(), code, res}
}

func mustOneObject(t *testing.T, out []byte) map[string]any {
	t.Helper()
	if !bytes.HasPrefix(out, []byte("{")) || !bytes.HasSuffix(out, []byte("}\n")) || bytes.Count(out, []byte("\n")) != 1 {
		t.Fatalf("stdout is not exactly one JSON object line: %q", out)
	}
	var res map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("stdout is not JSON: %v: %q", err, out)
	}
	if dec.More() {
		t.Fatalf("more than one JSON value on stdout: %q", out)
	}
	return res
}

func TestEntryInChildProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	tests := []struct {
		name       string
		argv0      string
		args       string
		wantCode   int
		wantResult map[string]any
		wantMsg    string
		wantStderr []string
		maxTime    time.Duration
	}{
		{name: "junk on stdout goes to stderr", argv0: "/x/gopve", args: `{"_gopve_module": "junk"}`,
			wantResult: map[string]any{"ok": true, "changed": false},
			wantStderr: []string{"junk from fmt.Println", `{"not": "the result"}`, "junk from a child process"}},
		{name: "panic", argv0: "/x/gopve", args: `{"_gopve_module": "boom"}`, wantCode: 1,
			wantResult: map[string]any{"failed": true}, wantMsg: "panic: boom on purpose",
			wantStderr: []string{"junk before the panic", "goroutine"}},
		{name: "stuck module: the watchdog answers", argv0: "/x/gopve", args: `{"_gopve_module": "stuck"}`, wantCode: 1,
			wantResult: map[string]any{"failed": true}, wantMsg: "timed out after 200ms while ignoring the deadline on purpose",
			maxTime: 15 * time.Second},
		{name: "module picked by program name (symlink)", argv0: "/usr/lib/x/echo", args: `{"name": "n"}`,
			wantResult: map[string]any{"changed": false}},
		{name: "module picked by Ansible's copy name", argv0: "/tmp/ansible-tmp-1/AnsiballZ_echo", args: `{"name": "n"}`,
			wantResult: map[string]any{"changed": false}},
		{name: "_gopve_module wins over the program name", argv0: "/x/junk", args: `{"_gopve_module": "echo", "name": "n"}`,
			wantResult: map[string]any{"changed": false}},
		{name: "unknown module lists the known ones", argv0: "/x/gopve", args: `{"_gopve_module": "pve_nope"}`, wantCode: 1,
			wantResult: map[string]any{"failed": true}, wantMsg: `no module "pve_nope" (from _gopve_module) in this gopve binary; it provides: boom, echo, junk, stuck`},
		{name: "no module at all", argv0: "/x/gopve", args: `{}`, wantCode: 1,
			wantResult: map[string]any{"failed": true}, wantMsg: `no module "gopve" (from the program name)`},
		{name: "args file not JSON", argv0: "/x/echo", args: `name=x`, wantCode: 1,
			wantResult: map[string]any{"failed": true}, wantMsg: "the args file is not valid JSON"},
		{name: "validation error", argv0: "/x/echo", args: `{"count": "x", "secret": "hidden-value", "name": "hidden-value"}`, wantCode: 1,
			wantResult: map[string]any{"failed": true, "changed": false}, wantMsg: "argument 'count' is of type <class 'str'> and we were unable to convert to int"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			got := runChild(t, tc.argv0, tc.args)
			if tc.maxTime > 0 && time.Since(start) > tc.maxTime {
				t.Errorf("took %v", time.Since(start))
			}
			if got.code != tc.wantCode {
				t.Errorf("exit code %d, want %d", got.code, tc.wantCode)
			}
			for k, v := range tc.wantResult {
				if got.result[k] != v {
					t.Errorf("%s = %v, want %v (result %v)", k, got.result[k], v, got.result)
				}
			}
			if msg, _ := got.result["msg"].(string); !strings.Contains(msg, tc.wantMsg) {
				t.Errorf("msg %q lacks %q", msg, tc.wantMsg)
			}
			for _, s := range tc.wantStderr {
				if !strings.Contains(got.stderr, s) {
					t.Errorf("stderr lacks %q: %q", s, got.stderr)
				}
			}
			if strings.Contains(got.stdout, "hidden-value") {
				t.Errorf("secret on stdout: %s", got.stdout)
			}
		})
	}
}

// Args files exactly as the controllers write them (reference §1.3/§1.4).
const args214 = `{"name": "hello", "count": "5", "_ansible_check_mode": false, "_ansible_no_log": false, "_ansible_debug": false,
 "_ansible_diff": true, "_ansible_verbosity": 3, "_ansible_version": "2.14.18",
 "_ansible_module_name": "gopve.proxmox.echo", "_ansible_syslog_facility": "LOG_USER",
 "_ansible_selinux_special_fs": ["fuse","nfs","vboxsf","ramfs","9p","vfat"],
 "_ansible_string_conversion_action": "warn", "_ansible_socket": null,
 "_ansible_shell_executable": "/bin/sh", "_ansible_keep_remote_files": false,
 "_ansible_tmpdir": "/root/.ansible/tmp/ansible-tmp-1/", "_ansible_remote_tmp": "~/.ansible/tmp",
 "_gopve_module": "echo"}`

const args221 = `{"name": "hello", "count": 5, "_ansible_check_mode": true, "_ansible_no_log": false, "_ansible_debug": false,
 "_ansible_diff": false, "_ansible_verbosity": 0, "_ansible_version": "2.21.0",
 "_ansible_module_name": "gopve.proxmox.echo", "_ansible_syslog_facility": "LOG_USER",
 "_ansible_selinux_special_fs": ["fuse","nfs","vboxsf","ramfs","9p","vfat"],
 "_ansible_socket": null, "_ansible_shell_executable": "/bin/sh", "_ansible_keep_remote_files": false,
 "_ansible_tmpdir": null, "_ansible_remote_tmp": "~/.ansible/tmp",
 "_ansible_ignore_unknown_opts": false, "_ansible_target_log_info": null, "_ansible_tracebacks_for": [],
 "_ansible_inject_invocation": false, "_ansible_some_future_key": {"x": 1},
 "_gopve_module": "echo", "_gopve_future": 1}`

func TestArgsFileShapes(t *testing.T) {
	tests := []struct {
		name           string
		args           string
		check, diff    bool
		verbosity      int
		version        string
		wantInvocation bool
	}{
		{"ansible-core 2.14", args214, false, true, 3, "2.14.18", true},
		{"ansible-core 2.21", args221, true, false, 0, "2.21.0", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inv, err := ParseArgs([]byte(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			if inv.GopveModule != "echo" || inv.CheckMode != tc.check || inv.Diff != tc.diff || inv.Verbosity != tc.verbosity || inv.AnsibleVersion != tc.version {
				t.Errorf("parsed %+v", inv)
			}
			if len(inv.Params) != 2 {
				t.Errorf("params = %v, want only name and count", inv.Params)
			}
			p := &printer{w: io.Discard}
			var out bytes.Buffer
			p.w = &out
			mainWith(context.Background(), helperModules(), []string{"/x/gopve", writeTemp(t, tc.args)}, noEnv, io.Discard, p, time.Second, func(int) {})
			res := mustOneObject(t, out.Bytes())
			if res["failed"] != nil {
				t.Fatalf("failed: %v", res["msg"])
			}
			params := res["params"].(map[string]any)
			if params["count"] != float64(5) || params["name"] != "hello" {
				t.Errorf("params = %v", params)
			}
			if _, ok := res["invocation"]; ok != tc.wantInvocation {
				t.Errorf("invocation present = %v, want %v", ok, tc.wantInvocation)
			}
			if res["check_mode"] != tc.check || res["diff_mode"] != tc.diff {
				t.Errorf("modes = %v/%v", res["check_mode"], res["diff_mode"])
			}
		})
	}
}

func TestIgnoreUnknownOpts(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		args := fmt.Sprintf(`{"name": "n", "bogus": 1, "_ansible_ignore_unknown_opts": %v, "_gopve_module": "echo"}`, ignore)
		var out bytes.Buffer
		mainWith(context.Background(), helperModules(), []string{"/x/gopve", writeTemp(t, args)}, noEnv, io.Discard, &printer{w: &out}, time.Second, func(int) {})
		res := mustOneObject(t, out.Bytes())
		if failed := res["failed"] == true; failed == ignore {
			t.Errorf("ignore_unknown_opts=%v: result %v", ignore, res)
		}
		if !ignore && res["msg"] != "Unsupported parameters for (echo) module: bogus. Supported parameters include: count, name, secret, timeout." {
			t.Errorf("msg = %q", res["msg"])
		}
	}
}

func writeTemp(t testing.TB, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "args")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The watchdog and a late-returning module both try to print: only the
// first result may reach stdout.
func TestOnlyOneResult(t *testing.T) {
	release := make(chan struct{})
	mods := []Module{{Name: "slow", Timeout: 20 * time.Millisecond, Run: func(r *Run) error {
		<-release // ignores its context on purpose
		return nil
	}}}
	var out bytes.Buffer
	p := &printer{w: &out}
	exited := make(chan int, 1)
	code := mainWith(context.Background(), mods, []string{"/x/slow", writeTemp(t, `{}`)}, noEnv, io.Discard, p, 10*time.Millisecond, func(c int) { exited <- c })
	close(release)
	if code != 1 || <-exited != 1 {
		t.Fatalf("code %d", code)
	}
	// The module now returns; a second emit must be swallowed.
	p.emit(map[string]any{"changed": false})
	res := mustOneObject(t, out.Bytes())
	if !strings.Contains(res["msg"].(string), "timed out after 20ms") {
		t.Errorf("msg = %v", res["msg"])
	}
}
