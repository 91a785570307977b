package qemu

import (
	"errors"
	"regexp"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi"
)

// Errors qemu-server raises after its config update wrote (API2/Qemu.pm
// update_vm_api's $updatefn): the new values are written to [PENDING]
// first, then a running VM gets vmconfig_hotplug_pending, a stopped one
// vmconfig_apply_pending, and only then `raise_param_exc($errors)` answers
// `400 Parameter verification failed.` with one message per key it could
// not apply — `hotplug problem - <die>` (QemuServer.pm $add_error) or
// `unable to apply pending change <key> : <die>` ($add_apply_error). Every
// other key is applied; the failed ones stay in [PENDING]. In the task
// variant (POST, qmconfig) the same exception ends the task: its exit
// status is the stringified exception on one line (RESTEnvironment.pm
// fork_worker: newlines become spaces).
const (
	hotplugProblem = "hotplug problem - "
	applyProblem   = "unable to apply pending change "
)

// RaisedAfterWrite tells whether err is such an answer of a config update
// (pveapi.Write.RaisesAfterWrite for PUT/POST …/config).
func RaisedAfterWrite(err error) bool { return len(AfterWriteErrors(err)) > 0 }

// taskKeyRe finds `<key>: hotplug problem - ` in a task's one-line status.
var taskKeyRe = regexp.MustCompile(`(?:^|\s)([a-z]+[0-9]*): (?:hotplug problem - |unable to apply pending change )`)

// AfterWriteErrors returns PVE's message per key of an answer raised after
// the write (nil for any other error). From a task's exit status the keys
// are cut out of the one line: each message runs to the next key.
func AfterWriteErrors(err error) map[string]string {
	var e *pveapi.Error
	if errors.As(err, &e) && e.Status == 400 {
		out := map[string]string{}
		for k, m := range e.Errors {
			if strings.HasPrefix(m, hotplugProblem) || strings.HasPrefix(m, applyProblem) {
				out[k] = strings.TrimSpace(m)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	var te *pveapi.TaskError
	if !errors.As(err, &te) || !strings.Contains(te.ExitStatus, "Parameter verification failed.") {
		return nil
	}
	s := te.ExitStatus
	idx := taskKeyRe.FindAllStringSubmatchIndex(s, -1)
	if len(idx) == 0 {
		return nil
	}
	out := map[string]string{}
	for i, m := range idx {
		end := len(s)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		out[s[m[2]:m[3]]] = strings.TrimSpace(s[m[3]+2 : end])
	}
	return out
}
