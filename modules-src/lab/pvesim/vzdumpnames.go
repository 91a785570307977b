package pvesim

import "github.com/gopve/proxmox/modules-src/lab/pvesim/vzdump"

// The vzdump archive format lives in package vzdump. These names remain
// for lxcrestore.go and its test, which the simulator split's first step
// leaves untouched (another change edits the LXC files in parallel); the
// step that moves the LXC backend drops them and calls vzdump directly.
var errZstdCompressed = vzdump.ErrZstdCompressed

func extractVzdumpConfigTar(name string, data []byte) (string, error) {
	return vzdump.ExtractConfig(name, data)
}

// VzdumpCTArchive is vzdump.CTArchive (see above).
func VzdumpCTArchive(pctConf, comp string) ([]byte, error) { return vzdump.CTArchive(pctConf, comp) }
