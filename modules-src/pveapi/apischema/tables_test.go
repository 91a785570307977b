package apischema

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
)

var update = flag.Bool("update", false, "rewrite data/pve*.json from the embedded PVE schema")

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
	"POST /nodes/{node}/qemu/{vmid}/status/start",
	"POST /nodes/{node}/qemu/{vmid}/status/stop",
	"POST /nodes/{node}/qemu/{vmid}/status/shutdown",
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
	raw, err := json.MarshalIndent(table, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return append(raw, '\n')
}

// TestTables: the embedded tables are exactly what the official schema
// says for the endpoints the typed areas use.
func TestTables(t *testing.T) {
	for _, v := range Versions {
		want := build(t, v)
		file := fmt.Sprintf("data/pve%d.json", v)
		if *update {
			if err := os.WriteFile(file, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if have, _ := os.ReadFile(file); !bytes.Equal(have, want) {
			t.Errorf("%s is stale; run go test -run TestTables -update ./modules-src/pveapi/apischema", file)
		}
	}
}
