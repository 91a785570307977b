package apischema

import (
	"context"

	"github.com/gopve/proxmox/modules-src/pveapi"
)

// Write is the request as the dispatch-once layer sends it
// (pveansible.Dispatch): what names the change for messages; settle reads
// whether it took effect when its answer is lost (nil for a task request,
// which is settled from the node's task list with the request's TaskHint).
func (r Request) Write(what string, settle func(ctx context.Context) (bool, error)) pveapi.Write {
	w := pveapi.Write{Method: r.Method, Path: r.Path, Params: r.Params, What: what, Settle: settle, Needs: r.Needs}
	if r.Task != nil {
		w.Task = &pveapi.TaskWrite{Node: r.Task.Node, Types: append([]string(nil), r.Task.Types...), ID: r.Task.ID}
	}
	return w
}
