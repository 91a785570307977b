package pveapi

// Connection is how a client reaches a PVE API. The Ansible options that
// fill it (names, environment fallbacks, docs) live in package pveansible.
type Connection struct {
	Host          string
	Port          int
	User          string
	Password      string
	TokenID       string
	TokenSecret   string
	ValidateCerts bool
	CAPath        string
	Fingerprint   string
	Timeout       int // seconds per answer
}

// DefaultPort is pveproxy's port.
const DefaultPort = 8006
