// Package pveapi is how every API module talks to Proxmox VE: one client,
// one error type, one classifier, one retry policy, one task wait.
//
//   - Transport: github.com/luthermonson/go-proxmox for auth (API token in
//     either spelling, K7; password → ticket, logged in once up front) over
//     our own http.Client (validate_certs on by default, ca_path, or
//     api_fingerprint pinning the node's certificate, K14). Its typed calls
//     are not used (several break on real PVE answers) and neither is its
//     task wait (it ignores the context and returns nil for failed tasks).
//   - Local mode: no api_host, root on a PVE node → a root@pam ticket
//     minted with the node's /etc/pve/priv/authkey.key and HTTPS to its own
//     pveproxy (localticket.go); pvesh as the fallback, with a warning
//     (Client.Warnings), one process (≈0.5 s) per call, under the deadline.
//   - Answers: Decode reads `data` tolerantly (numbers as strings, 0/1
//     booleans, comma lists).
//   - Errors: *Error keeps method, path, HTTP status, PVE's message and
//     per-parameter errors, never a credential; KindOf classifies it (not
//     found, exists, locked, no quorum, temporary, permission, auth, bad
//     request, TLS).
//   - Reads (Get) retry temporary failures with bounded backoff.
//   - Writes: one operation, Dispatch(Write), is the only way to send a
//     POST, PUT or DELETE. It is sent once (re-sent only after PVE's lock
//     timeout, taken before it changes anything, or a dial that sent
//     nothing); a task write is waited out at the UPID's node. A lost
//     answer is settled by reading (the Write's Settle, or the task in the
//     node's task list), polled for a bounded time; if nothing shows, an
//     *UnverifiedError: changed, unverified, never re-sent.
//   - Check mode: a client made with Options.ReadOnly (or ReadOnlyClient)
//     fails every write as a bug before sending (*ReadOnlyError).
//   - Tasks: WaitTask polls at the UPID's node; OK or "WARNINGS: N" is
//     success (warnings returned for Ansible), anything else a *TaskError
//     with the log's tail; polling survives transient errors and stops at
//     the context's deadline.
//   - Permissions: RequireAny checks /access/permissions where PVE answers
//     an empty list rather than 403 (K19).
//   - Version: Client.Version reads /version once per run.
//
// The package knows nothing of Ansible: the connection options, the
// client of a Run and the mapping of a write's outcome to a Change's
// Apply live in the adapter package pveansible.
package pveapi
