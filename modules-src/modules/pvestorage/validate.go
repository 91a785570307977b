package pvestorage

import (
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi"

	"github.com/gopve/proxmox/modules-src/pveapi/storagetype"
)

// The formats PVE registers for storage options (pve-common JSONSchema.pm,
// pve-storage Storage/Plugin.pm). Messages follow PVE's where known; the
// storage-options and dir-override checks are reconstructions.
var (
	storageIDRe = regexp.MustCompile(`(?i)^[a-z][a-z0-9\-_.]*[a-z0-9]$`)
	nodeRe      = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?$`)
	vgnameRe    = regexp.MustCompile(`^[a-zA-Z0-9.+_][a-zA-Z0-9.+_\-]*$`)
	dnsNameRe   = regexp.MustCompile(`^(([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)\.)*([A-Za-z0-9]([A-Za-z0-9\-]*[A-Za-z0-9])?)$`)
	pathRe      = regexp.MustCompile(`^/[^;()]+$`)
	volumeIDRe  = regexp.MustCompile(`^(?i:[a-z][a-z0-9\-_.]*[a-z0-9]):.+$`)
	configIDRe  = regexp.MustCompile(`(?i)^[a-z][a-z0-9_-]+$`)
)

// checkStorageID is the storage id rule (pve-storage-id).
func checkStorageID(id string) error {
	if !storageIDRe.MatchString(id) {
		return fmt.Errorf("storage: %q contains illegal characters: a storage ID starts with a letter, continues with letters, digits, '-', '_' or '.', and ends with a letter or digit", id)
	}
	return nil
}

// checkValue validates a value (already in PVE's string form) for key
// against the schema of the node's version.
func checkValue(o optSchema, v string) error {
	switch o.Type {
	case "integer":
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
		if o.Min != nil && float64(n) < *o.Min || o.Max != nil && float64(n) > *o.Max {
			return fmt.Errorf("%d is out of range (%s)", n, rangeText(o))
		}
	case "number":
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", v)
		}
		if o.Min != nil && f < *o.Min || o.Max != nil && f > *o.Max {
			return fmt.Errorf("%v is out of range (%s)", f, rangeText(o))
		}
	case "boolean":
		if v != "0" && v != "1" {
			return fmt.Errorf("%q is not a boolean", v)
		}
	}
	if len(o.Enum) > 0 && !slices.Contains(o.Enum, v) {
		return fmt.Errorf("%q is not one of %s", v, strings.Join(o.Enum, ", "))
	}
	if o.Pattern != "" && !regexp.MustCompile("^(?:"+o.Pattern+")$").MatchString(v) {
		return fmt.Errorf("%q does not match the format %s", v, o.Pattern)
	}
	if o.MaxLength > 0 && len(v) > o.MaxLength {
		return fmt.Errorf("is longer than %d characters", o.MaxLength)
	}
	return checkFormat(o, v)
}

func rangeText(o optSchema) string {
	switch {
	case o.Min != nil && o.Max != nil:
		return fmt.Sprintf("%v to %v", *o.Min, *o.Max)
	case o.Min != nil:
		return fmt.Sprintf("at least %v", *o.Min)
	}
	return fmt.Sprintf("at most %v", *o.Max)
}

func checkFormat(o optSchema, v string) error {
	each := func(check func(string) error) error {
		for _, item := range pveapi.SplitList(v) {
			if err := check(item); err != nil {
				return err
			}
		}
		return nil
	}
	switch o.Format {
	case "pve-storage-id":
		if !storageIDRe.MatchString(v) {
			return fmt.Errorf("storage ID '%s' contains illegal characters", v)
		}
	case "pve-node-list":
		return each(func(n string) error {
			if !nodeRe.MatchString(n) {
				return fmt.Errorf("%q does not look like a valid node name", n)
			}
			return nil
		})
	case "pve-storage-content-list":
		return each(func(c string) error {
			if !slices.Contains(storagetype.ContentTypes(), c) {
				return fmt.Errorf("invalid content type '%s'", c)
			}
			return nil
		})
	case "pve-storage-path":
		// PVE::Storage::Plugin::verify_path: absolute, without ; ( ).
		if !pathRe.MatchString(v) {
			return fmt.Errorf("%q is not an absolute path (and may not contain ; ( ))", v)
		}
	case "pve-storage-server":
		if net.ParseIP(strings.Trim(v, "[]")) == nil && !dnsNameRe.MatchString(v) {
			return fmt.Errorf("%q does not look like a valid server name or address", v)
		}
	case "pve-storage-vgname":
		if !vgnameRe.MatchString(v) {
			return fmt.Errorf("%q is not a valid volume group name", v)
		}
	case "pve-volume-id":
		if !volumeIDRe.MatchString(v) {
			return fmt.Errorf("%q is not a volume id (storage:name)", v)
		}
	case "pve-configid":
		if !configIDRe.MatchString(v) {
			return fmt.Errorf("invalid configuration ID '%s'", v)
		}
	case "pve-storage-options":
		if strings.ContainsAny(v, " \t\n") {
			return fmt.Errorf("mount options may not contain whitespace: %q", v)
		}
	case "pve-dir-override-list":
		return each(func(item string) error {
			c, p, ok := strings.Cut(item, "=")
			if !ok || !slices.Contains(storagetype.ContentTypes(), c) || !strings.HasPrefix(p, "/") && p == "" {
				return fmt.Errorf("%q is not <content type>=<directory>", item)
			}
			return nil
		})
	case "prune-backups":
		return checkPruneBackups(v)
	case "property-string":
		for _, kv := range strings.Split(v, ",") {
			k, _, ok := strings.Cut(kv, "=")
			if !ok || !slices.Contains(o.Keys, k) {
				return fmt.Errorf("%q is not a key=value list of %s", v, strings.Join(o.Keys, ", "))
			}
		}
	}
	return nil
}
