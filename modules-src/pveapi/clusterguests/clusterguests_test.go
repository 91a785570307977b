package clusterguests

import (
	"strings"
	"testing"
)

func TestFindAndTemplates(t *testing.T) {
	list := []Guest{
		{VMID: 9000, Node: "pve01", Name: "debian-12", Type: "qemu", Template: true},
		{VMID: 9001, Node: "pve02", Name: "debian-12", Type: "qemu", Template: true},
		{VMID: 9002, Node: "pve02", Name: "ubuntu", Type: "qemu", Template: true},
		{VMID: 201, Node: "pve02", Name: "ubuntu", Type: "qemu"},
		{VMID: 200, Node: "pve01", Name: "runner", Type: "lxc"},
	}
	if g, ok := Find(list, 200); !ok || g.Node != "pve01" || g.HASID() != "ct:200" {
		t.Errorf("find 200: %+v %v", g, ok)
	}
	if _, ok := Find(list, 999); ok {
		t.Error("999 is nowhere")
	}
	// K1: a VM named like a template is not a template.
	if g, err := TemplateByName(list, "ubuntu"); err != nil || g.VMID != 9002 {
		t.Errorf("ubuntu: %+v %v", g, err)
	}
	if _, err := TemplateByName(list, "debian-12"); err == nil || !strings.Contains(err.Error(), "9000 on pve01, 9001 on pve02") {
		t.Errorf("two templates, one name: %v", err)
	}
	if _, err := TemplateByName(list, "Debian-12"); err == nil || !strings.Contains(err.Error(), "no template named") {
		t.Errorf("names match exactly: %v", err)
	}
}
