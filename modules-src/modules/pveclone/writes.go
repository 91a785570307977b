package pveclone

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
)

// write is one mutating call: the request (checked against the node's
// schema before it is sent), what it does in words, and how a read tells
// whether it happened when its answer is lost.
type write struct {
	req    apischema.Request
	what   string
	settle func(ctx context.Context) (bool, error)
}

// send dispatches w once. A task is waited out at its UPID's node (OK or
// WARNINGS is success, K3). Errors come back as Change.Apply returns them:
// NothingChanged when PVE refused before acting; an unanswered write is
// settled by w.settle, never sent again.
func (v *vm) send(ctx context.Context, w write) (*pveapi.TaskResult, error) {
	if err := w.req.Validate(v.version); err != nil {
		return nil, ansible.NothingChanged(v.schemaError(err))
	}
	var out any
	err := v.c.Do(ctx, w.req.Method, w.req.Path, w.req.Params, &out)
	if err != nil {
		if pveapi.NothingDone(err) {
			return nil, ansible.NothingChanged(fmt.Errorf("%s: %w", w.what, err))
		}
		if pveapi.IsUnanswered(err) && w.settle != nil {
			done, rerr := w.settle(ctx)
			if rerr == nil && done {
				v.r.Warn(fmt.Sprintf("the answer to %q was lost (%v); reading back shows it happened, so it was not sent again", w.what, err))
				return nil, nil
			}
			return nil, fmt.Errorf("%s: the answer was lost (%w) and a read does not show it happened; it was not sent again", w.what, err)
		}
		return nil, fmt.Errorf("%s: %w", w.what, err)
	}
	upid, ok := out.(string)
	if !ok || !strings.HasPrefix(upid, "UPID:") {
		return nil, nil
	}
	res, err := v.c.WaitTask(ctx, upid)
	if err != nil {
		var te *pveapi.TaskError
		if errors.As(err, &te) {
			v.taskLog = te.Log
		}
		return nil, fmt.Errorf("%s: %w", w.what, err)
	}
	for _, warn := range res.Warnings {
		v.r.Warn(fmt.Sprintf("%s: %s", w.what, warn))
	}
	return res, nil
}

// schemaError names the Ansible options behind the refused PVE keys.
func (v *vm) schemaError(err error) error {
	var e *apischema.Errors
	if !errors.As(err, &e) {
		return err
	}
	parts := make([]string, len(e.List))
	for i, p := range e.List {
		if p.Key != "" {
			parts[i] = fmt.Sprintf("%s: key '%s': %s", optionOf(p.Param), p.Key, p.Msg)
		} else {
			parts[i] = fmt.Sprintf("%s: %s", optionOf(p.Param), p.Msg)
		}
	}
	return fmt.Errorf("%s (refused by the PVE %d API schema before anything was sent)", strings.Join(parts, "; "), e.Version)
}
