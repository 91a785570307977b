package apt

import "strings"

// proxyVars are the variables apt's http and https methods read (and curl-
// style no_proxy), in both cases: Ansible's `environment:` sets them on the
// module process, but commands run with a fixed, clean environment (a C
// locale, no prompts), so they must be passed on explicitly or a node behind
// a proxy cannot reach its repositories.
var proxyVars = []string{"http_proxy", "https_proxy", "ftp_proxy", "all_proxy", "no_proxy"}

// ProxyEnv picks the proxy variables out of environ (os.Environ()), lower
// and upper case, keeping their order. Their values may carry credentials:
// they go into the command's environment only, never onto its command line
// (host.Command.String does not render Env).
func ProxyEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		for _, v := range proxyVars {
			if k == v || k == strings.ToUpper(v) {
				out = append(out, kv)
				break
			}
		}
	}
	return out
}
