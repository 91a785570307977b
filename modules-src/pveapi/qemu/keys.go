package qemu

import (
	"regexp"
	"strconv"
)

// Highest indexes, as qemu-server's MAX_* constants (Drive.pm, Network.pm).
var maxIndex = map[string]int{"ide": 3, "sata": 5, "scsi": 30, "virtio": 15, "net": 31, "ipconfig": 31, "unused": 255}

var keyRe = regexp.MustCompile(`^([a-z]+)(0|[1-9]\d*)$`)

// SplitKey splits "scsi3" into ("scsi", 3); ok is false for keys without
// an index or past qemu-server's limit.
func SplitKey(key string) (base string, index int, ok bool) {
	m := keyRe.FindStringSubmatch(key)
	if m == nil {
		return "", 0, false
	}
	n, err := strconv.Atoi(m[2])
	if err != nil {
		return "", 0, false
	}
	switch m[1] {
	case "efidisk", "tpmstate":
		return m[1], n, n == 0
	}
	max, known := maxIndex[m[1]]
	return m[1], n, known && n <= max
}

// IsDisk tells whether key is a drive (Drive.pm is_valid_drivename):
// ideN, sataN, scsiN, virtioN, efidisk0, tpmstate0 — not unusedN.
func IsDisk(key string) bool {
	base, _, ok := SplitKey(key)
	switch base {
	case "ide", "sata", "scsi", "virtio", "efidisk", "tpmstate":
		return ok
	}
	return false
}

// IsUnused tells whether key is unusedN.
func IsUnused(key string) bool { b, _, ok := SplitKey(key); return ok && b == "unused" }

// IsNet tells whether key is netN.
func IsNet(key string) bool { b, _, ok := SplitKey(key); return ok && b == "net" }

// IsIPConfig tells whether key is ipconfigN.
func IsIPConfig(key string) bool { b, _, ok := SplitKey(key); return ok && b == "ipconfig" }
