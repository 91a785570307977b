package apischema

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
)

var update = flag.Bool("update", false, "rewrite data/pve*.json.gz from the embedded PVE schema")

// endpoints are the methods the typed areas build or read.
var endpoints = []string{
	// qemu (pveapi/qemu)
	"GET /nodes/{node}/qemu/{vmid}/config",
	"PUT /nodes/{node}/qemu/{vmid}/config",
	"POST /nodes/{node}/qemu/{vmid}/config",
	"GET /nodes/{node}/qemu/{vmid}/pending",
	"POST /nodes/{node}/qemu",
	"POST /nodes/{node}/qemu/{vmid}/clone",
	"PUT /nodes/{node}/qemu/{vmid}/resize",
	"DELETE /nodes/{node}/qemu/{vmid}",
	"POST /nodes/{node}/qemu/{vmid}/template",
	"POST /nodes/{node}/qemu/{vmid}/migrate",
	"POST /nodes/{node}/qemu/{vmid}/status/start",
	"POST /nodes/{node}/qemu/{vmid}/status/stop",
	"POST /nodes/{node}/qemu/{vmid}/status/shutdown",
	// lxc (pve_container)
	"GET /nodes/{node}/lxc/{vmid}/config",
	"PUT /nodes/{node}/lxc/{vmid}/config",
	"GET /nodes/{node}/lxc/{vmid}/pending",
	"POST /nodes/{node}/lxc",
	"PUT /nodes/{node}/lxc/{vmid}/resize",
	"DELETE /nodes/{node}/lxc/{vmid}",
	"POST /nodes/{node}/lxc/{vmid}/status/start",
	"POST /nodes/{node}/lxc/{vmid}/status/stop",
	"POST /nodes/{node}/lxc/{vmid}/status/shutdown",
	// cluster resources, next id, tasks
	"GET /cluster/resources",
	"GET /cluster/nextid",
	"GET /nodes/{node}/tasks",
	// replication (pveapi/replication)
	"GET /cluster/replication",
	"POST /cluster/replication",
	"GET /cluster/replication/{id}",
	"PUT /cluster/replication/{id}",
	"DELETE /cluster/replication/{id}",
	"GET /nodes/{node}/replication",
	"GET /nodes/{node}/replication/{id}/status",
	"POST /nodes/{node}/replication/{id}/schedule_now",
	// HA (pveapi/ha)
	"GET /cluster/ha/resources",
	"POST /cluster/ha/resources",
	"GET /cluster/ha/resources/{sid}",
	"PUT /cluster/ha/resources/{sid}",
	"DELETE /cluster/ha/resources/{sid}",
	"POST /cluster/ha/resources/{sid}/migrate",
	"POST /cluster/ha/resources/{sid}/relocate",
	"GET /cluster/ha/groups",
	"POST /cluster/ha/groups",
	"PUT /cluster/ha/groups/{group}",
	"DELETE /cluster/ha/groups/{group}",
	"GET /cluster/ha/rules",
	"POST /cluster/ha/rules",
	"PUT /cluster/ha/rules/{rule}",
	"DELETE /cluster/ha/rules/{rule}",
	// access (pve_access)
	"POST /access/users",
	"PUT /access/users/{userid}",
	"DELETE /access/users/{userid}",
	"PUT /access/password",
	"POST /access/groups",
	"PUT /access/groups/{groupid}",
	"DELETE /access/groups/{groupid}",
	"POST /access/roles",
	"PUT /access/roles/{roleid}",
	"DELETE /access/roles/{roleid}",
	"PUT /access/acl",
	"POST /access/users/{userid}/token/{tokenid}",
	"PUT /access/users/{userid}/token/{tokenid}",
	"DELETE /access/users/{userid}/token/{tokenid}",
}

func convert(p *pveschema.Prop, name string) *Param {
	out := &Param{Type: p.Type, Optional: bool(p.Optional), Format: p.FormatName(), Enum: p.Enum, Pattern: p.Pattern,
		DefaultKey: bool(p.DefaultKey), Alias: p.Alias, KeyAlias: p.KeyAlias}
	if p.Minimum != nil {
		v := float64(*p.Minimum)
		out.Min = &v
	}
	if p.Maximum != nil {
		v := float64(*p.Maximum)
		out.Max = &v
	}
	if p.MaxLength != nil {
		out.MaxLength = int(*p.MaxLength)
	}
	if len(p.Default) > 0 {
		out.Default = strings.Trim(string(p.Default), `"`)
	}
	if keys := p.PropertyString(); keys != nil {
		out.Keys = map[string]*Param{}
		for k, kp := range keys {
			out.Keys[k] = convert(kp, k)
		}
	}
	if base, ok := strings.CutSuffix(name, "[n]"); ok {
		out.MaxIndex = pveschema.IndexRanges[base]
	}
	return out
}

func build(t *testing.T, version int) []byte {
	s, err := pveschema.Load(version)
	if err != nil {
		t.Fatal(err)
	}
	table := Table{}
	for _, e := range endpoints {
		method, path, _ := strings.Cut(e, " ")
		m := s.Method(method, path)
		if m == nil {
			continue // e.g. the rules endpoints on PVE 8
		}
		out := &Method{Params: map[string]*Param{}}
		if m.Parameters != nil {
			for k, p := range m.Parameters.Properties {
				out.Params[k] = convert(p, k)
			}
		}
		table[e] = out
	}
	raw, err := json.Marshal(table)
	if err != nil {
		t.Fatal(err)
	}
	return append(raw, '\n')
}

// gunzip is the content of a gzipped table file, nil when unreadable.
func gunzip(file string) []byte {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil
	}
	raw, err := io.ReadAll(z)
	if err != nil {
		return nil
	}
	return raw
}

// writeGzip writes raw gzipped with no name or time in its header, so the
// file changes only when the table does.
func writeGzip(file string, raw []byte) error {
	var b bytes.Buffer
	z, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := z.Write(raw); err != nil {
		return err
	}
	if err := z.Close(); err != nil {
		return err
	}
	return os.WriteFile(file, b.Bytes(), 0o644)
}

// TestTables: the embedded tables are exactly what the official schema
// says for the endpoints the typed areas use.
func TestTables(t *testing.T) {
	for _, v := range Versions {
		want := build(t, v)
		file := fmt.Sprintf("data/pve%d.json.gz", v)
		if *update {
			if err := writeGzip(file, want); err != nil {
				t.Fatal(err)
			}
			continue
		}
		// Compared unpacked: another Go version may compress the same
		// table into other bytes.
		if have := gunzip(file); !bytes.Equal(have, want) {
			t.Errorf("%s is stale; run go test -run TestTables -update ./modules-src/pveapi/apischema", file)
		}
	}
}
