package pveclone

import (
	"context"

	"github.com/gopve/proxmox/modules-src/modules/pveclone/options"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// write is one mutating call: the request (checked against the node's
// schema before it is sent), what it does in words, and how a read tells
// whether it happened when its answer is lost.
type write struct {
	req      apischema.Request
	what     string
	settle   func(ctx context.Context) (bool, error)
	creates  bool   // a clone or create: PVE refuses it when the VMID exists
	taskType string // the worker when PVE picks one of several (hastart for an HA guest)
	// afterWrite: the handler may raise after it wrote (the VM config
	// update's hotplug problems, qemu.RaisedAfterWrite).
	afterWrite bool
	// proof tells, for a clone or create, whether the new VMID holds the
	// VM this write sent (pveapi.Write.Proof: required for creates).
	proof func(ctx context.Context) (pveapi.Evidence, error)
}

// send dispatches w once through pveapi's dispatch path: a task is waited
// out at its UPID's node (OK or WARNINGS is success, K3; the warnings are
// shown), a lost answer is settled by the node's task list or w.settle,
// never by sending it again. A failed task's log is kept for the result.
func (v *vm) send(ctx context.Context, w write) (*pveapi.TaskResult, error) {
	pw := pveapi.Write{What: w.what, Settle: w.settle, Creates: w.creates, Proof: w.proof}
	if w.afterWrite {
		pw.RaisesAfterWrite = qemu.RaisedAfterWrite
	}
	res, log, err := pveansible.SendChecked(ctx, v.r, v.c, v.version, w.req, pw, w.taskType, v.schemaError)
	if log != nil {
		v.taskLog = log
	}
	return res, err
}

// schemaError names the Ansible options behind the refused PVE keys.
func (v *vm) schemaError(err error) error { return pveansible.SchemaError(err, options.Of) }
