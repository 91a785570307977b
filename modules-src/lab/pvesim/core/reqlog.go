package core

import "github.com/gopve/proxmox/modules-src/lab/pvesim/reqlog"

// Request is one entry of the request log (pvesim/reqlog), as the Go API
// names it (Requests).
type Request = reqlog.Request
