// Package apischema checks a request against the official API schema of
// the node's PVE major version before it is sent, so bad input fails with
// the parameter's name and nothing changes — the way pve_storage already
// validates (modules/pvestorage/schema_gen.go), for every endpoint the
// typed areas (qemu, resources, replication, HA, tasks) use.
//
// The tables (data/pve8.json.gz, data/pve9.json.gz) are cut from the lab's
// embedded copy of pve-docs' apidata.js by `go test -run TestTables
// -update`; a test fails when they drift from it, and the shipped binary
// carries them without importing the lab. What apidata.js does not carry
// is added from PVE's sources and cited where it is: the index range of
// numbered keys (net[n] is net0..net31), and the keys of the hash formats
// apidata.js only names (pve-qm-ipconfig, pve-qm-boot).
//
// A Request is a write (or read) as a value — method, path, parameters —
// that a typed area builds and a caller dispatches; this package never
// sends anything. Validate follows pve-common's JSONSchema.pm check_prop:
// unknown parameters, types, enums, patterns, bounds, lengths, named
// formats (pveformat.CheckFormat) and the keys of property strings.
package apischema
