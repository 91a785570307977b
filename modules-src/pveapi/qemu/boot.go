package qemu

import (
	"fmt"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
)

var bootShape = pveformat.Shape{DefaultKey: "legacy"}

// Boot is the `boot` option (QemuServer.pm $boot_fmt): an order of
// devices, or the deprecated legacy letters ("cdn", the default when boot
// is not set at all).
type Boot struct {
	Order  []string // "scsi0", "ide2", "net0"
	Legacy string
	Other  pveformat.Props
}

// ParseBoot reads "order=scsi0;ide2;net0" (or legacy "cdn").
func ParseBoot(value string) (Boot, error) {
	p, err := pveformat.Parse(value, bootShape)
	if err != nil {
		return Boot{}, fmt.Errorf("boot: %w", err)
	}
	t := &take{props: p, name: "boot"}
	b := Boot{Legacy: t.str("legacy")}
	if o := t.str("order"); o != "" {
		b.Order = pveformat.SplitList(o)
	}
	b.Other = t.rest()
	return b, nil
}

// Render prints the value as PVE stores it: order joined by ';' (a comma
// would end the property).
func (b Boot) Render() (string, error) {
	p := &put{}
	p.str("legacy", b.Legacy)
	p.str("order", strings.Join(b.Order, ";"))
	p.other(b.Other)
	return pveformat.Print(p.props, bootShape)
}
