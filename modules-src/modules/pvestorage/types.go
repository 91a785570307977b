package pvestorage

import (
	"slices"

	"github.com/gopve/proxmox/modules-src/pveapi/storagetype"
)

// storageType is what a pve-storage plugin declares about one storage
// type (options(): the keys it takes, which are required at creation,
// which are fixed — PVE refuses to change them: "can't change value of
// fixed parameter"; plugindata(): the content types it can hold and its
// 'sensitive-properties', kept under /etc/pve/priv, see secrets.go). The
// API schema only has the union of all types' keys, so it comes from
// pveapi/storagetype, the table the lab simulates too.
type storageType = storagetype.Type

// storageTypes are the types this module manages, by name.
var storageTypes = func() map[string]storageType {
	m := map[string]storageType{}
	for _, n := range typeNames {
		m[n] = storagetype.Of(n)
	}
	return m
}()

// typeNames is the `type` choices, in documentation order.
var typeNames = []string{"zfspool", "dir", "nfs", "cifs", "lvmthin", "lvm", "pbs"}

// secretKeys are the sensitive properties that are secrets (master-pubkey
// is a public key): no_log options, never in results, diffs or pvesh argv.
var secretKeys = []string{"password", "encryption-key"}

// allKeys is every key of every supported type, any version.
func allKeys() []string {
	var keys []string
	for _, t := range storageTypes {
		for _, list := range [][]string{t.Options, t.V8Only, t.V9Only} {
			for _, k := range list {
				if !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
			}
		}
	}
	slices.Sort(keys)
	return keys
}
