package zfs

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// What `zfs set` accepts for a pool's root filesystem, checked before a
// task plans anything: check mode must not predict a create or a `zfs set`
// that the real run would see zfs refuse. The table follows OpenZFS 2.2/2.3
// (module/zcommon/zfs_prop.c); a value zfs would reject is refused here with
// the values it accepts.

// propKind says how a property's values are checked and compared.
type propKind int

const (
	kindIndex    propKind = iota // one of a fixed list of words
	kindSize                     // bytes, with units; compared as numbers
	kindCount                    // a plain number (limits), "none" allowed
	kindFree                     // free text zfs interprets (sharenfs, contexts)
	kindCreate                   // fixed at creation: only valid for a new pool
	kindVolume                   // applies to volumes (zvols) only
	kindReadonly                 // statistics zfs computes
)

type propDef struct {
	kind   propKind
	values []string           // kindIndex (and kindCreate when non-nil)
	check  func(uint64) error // kindSize: extra range rule
	none   bool               // kindSize/kindCount: "none" (read back as 0 with -p) allowed
	alias  map[string]string  // accepted spellings → what zfs reads back
}

var onOff = []string{"on", "off"}

func powerOfTwo(name string, lo, hi uint64) func(uint64) error {
	return func(n uint64) error {
		if n < lo || n > hi || n&(n-1) != 0 {
			return fmt.Errorf("%s must be a power of 2 from %s to %s", name, nicenum(lo), nicenum(hi))
		}
		return nil
	}
}

var compressionValues = func() []string {
	v := []string{"on", "off", "lzjb", "gzip", "zle", "lz4", "zstd", "zstd-fast"}
	for i := 1; i <= 9; i++ {
		v = append(v, "gzip-"+strconv.Itoa(i))
	}
	for i := 1; i <= 19; i++ {
		v = append(v, "zstd-"+strconv.Itoa(i))
	}
	for _, i := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 500, 1000} {
		v = append(v, "zstd-fast-"+strconv.Itoa(i))
	}
	return v
}()

var checksums = []string{"on", "off", "fletcher2", "fletcher4", "sha256", "noparity", "sha512", "skein", "edonr", "blake3"}

var props = map[string]propDef{
	"aclinherit":         {kind: kindIndex, values: []string{"discard", "noallow", "restricted", "passthrough", "passthrough-x"}},
	"aclmode":            {kind: kindIndex, values: []string{"discard", "groupmask", "passthrough", "restricted"}},
	"acltype":            {kind: kindIndex, values: []string{"off", "noacl", "nfsv4", "posix", "posixacl"}, alias: map[string]string{"posixacl": "posix", "noacl": "off"}},
	"atime":              {kind: kindIndex, values: onOff},
	"canmount":           {kind: kindIndex, values: []string{"on", "off", "noauto"}},
	"checksum":           {kind: kindIndex, values: checksums},
	"compression":        {kind: kindIndex, values: compressionValues},
	"copies":             {kind: kindIndex, values: []string{"1", "2", "3"}},
	"dedup":              {kind: kindIndex, values: []string{"on", "off", "verify", "sha256", "sha256,verify", "sha512", "sha512,verify", "skein", "skein,verify", "edonr,verify", "blake3", "blake3,verify"}},
	"devices":            {kind: kindIndex, values: onOff},
	"direct":             {kind: kindIndex, values: []string{"disabled", "standard", "always"}},
	"dnodesize":          {kind: kindIndex, values: []string{"legacy", "auto", "1k", "2k", "4k", "8k", "16k"}},
	"exec":               {kind: kindIndex, values: onOff},
	"logbias":            {kind: kindIndex, values: []string{"latency", "throughput"}},
	"nbmand":             {kind: kindIndex, values: onOff},
	"overlay":            {kind: kindIndex, values: onOff},
	"primarycache":       {kind: kindIndex, values: []string{"all", "none", "metadata"}},
	"readonly":           {kind: kindIndex, values: onOff},
	"redundant_metadata": {kind: kindIndex, values: []string{"all", "most", "some", "none"}},
	"relatime":           {kind: kindIndex, values: onOff},
	"secondarycache":     {kind: kindIndex, values: []string{"all", "none", "metadata"}},
	"setuid":             {kind: kindIndex, values: onOff},
	"snapdev":            {kind: kindIndex, values: []string{"hidden", "visible"}},
	"snapdir":            {kind: kindIndex, values: []string{"hidden", "visible", "disabled"}},
	"sync":               {kind: kindIndex, values: []string{"standard", "always", "disabled"}},
	"vscan":              {kind: kindIndex, values: onOff},
	"xattr":              {kind: kindIndex, values: []string{"on", "off", "sa", "dir"}},
	"zoned":              {kind: kindIndex, values: onOff},
	"quota":              {kind: kindSize, none: true},
	"refquota":           {kind: kindSize, none: true},
	"reservation":        {kind: kindSize, none: true},
	"refreservation":     {kind: kindSize, none: true},
	"recordsize":         {kind: kindSize, check: powerOfTwo("recordsize", 512, 16<<20)},
	"special_small_blocks": {kind: kindSize, check: func(n uint64) error {
		if n != 0 {
			return powerOfTwo("special_small_blocks", 512, 16<<20)(n)
		}
		return nil
	}},
	"filesystem_limit": {kind: kindCount, none: true},
	"snapshot_limit":   {kind: kindCount, none: true},
	"sharenfs":         {kind: kindFree},
	"sharesmb":         {kind: kindFree},
	"context":          {kind: kindFree},
	"fscontext":        {kind: kindFree},
	"defcontext":       {kind: kindFree},
	"rootcontext":      {kind: kindFree},
	"keylocation":      {kind: kindFree},
	"mountpoint":       {kind: kindFree},
	"casesensitivity":  {kind: kindCreate, values: []string{"sensitive", "insensitive", "mixed"}},
	"normalization":    {kind: kindCreate, values: []string{"none", "formC", "formD", "formKC", "formKD"}},
	"utf8only":         {kind: kindCreate, values: onOff},
	"encryption":       {kind: kindCreate, values: []string{"off", "on", "aes-128-ccm", "aes-192-ccm", "aes-256-ccm", "aes-128-gcm", "aes-192-gcm", "aes-256-gcm"}},
	"keyformat":        {kind: kindCreate, values: []string{"none", "raw", "hex", "passphrase"}},
	"volblocksize":     {kind: kindVolume},
	"volsize":          {kind: kindVolume},
	"volmode":          {kind: kindVolume},
}

// Statistics and other values zfs computes; `zfs set` refuses them.
var readonlyProps = []string{"available", "avail", "compressratio", "createtxg", "creation", "guid", "keystatus",
	"logicalreferenced", "logicalused", "mounted", "objsetid", "origin", "referenced", "refer", "type", "used",
	"usedbychildren", "usedbydataset", "usedbyrefreservation", "usedbysnapshots", "version", "written"}

// Short names zfs accepts for a property.
var propAliases = map[string]string{"compress": "compression", "recsize": "recordsize", "reserv": "reservation",
	"refreserv": "refreservation"}

var (
	nativeName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	// user properties: a colon, then lower case letters, digits and : + . _ -
	userName = regexp.MustCompile(`^[a-z0-9_.+-]+:[a-z0-9:_.+-]*$`)
)

// CanonicalProp returns the name zfs reads a property back under
// ("compress" → "compression").
func CanonicalProp(name string) string {
	if a, ok := propAliases[name]; ok {
		return a
	}
	return name
}

// IsUserProp tells a user property ("org.example:owner") from a native one.
func IsUserProp(name string) bool { return strings.Contains(name, ":") }

// ValidateProp checks a property a task wants to set on a pool's root
// filesystem. creating says whether the pool is created in this run (then
// create-time-only properties are allowed). The error names the property and
// what zfs accepts; it does not name the option (the caller does).
func ValidateProp(name, value string, creating bool) error {
	switch {
	case strings.HasPrefix(name, "-"):
		return fmt.Errorf("%q is not a property name (it starts with '-', so zfs would read it as an option)", name)
	case IsUserProp(name):
		if !userName.MatchString(name) || len(name) > 256 {
			return fmt.Errorf("%q is not a valid user property name (lower case letters, digits and : + . _ -, with a colon)", name)
		}
		if strings.ContainsAny(value, "\n\x00") || len(value) > 8192 {
			return fmt.Errorf("the value of %s must be one line of at most 8192 characters", name)
		}
		return nil
	case !nativeName.MatchString(name):
		return fmt.Errorf("%q is not a valid property name", name)
	}
	if slices.Contains(readonlyProps, name) {
		return fmt.Errorf("%s is read-only: zfs computes it", name)
	}
	def, ok := props[CanonicalProp(name)]
	if !ok {
		return fmt.Errorf("%s is not a ZFS filesystem property (user properties need a colon, e.g. org.example:%s)", name, name)
	}
	if value == "" || strings.ContainsAny(value, "\n\x00") {
		return fmt.Errorf("%s: the value must be one non-empty line", name)
	}
	switch def.kind {
	case kindIndex:
		if !slices.Contains(def.values, value) {
			return fmt.Errorf("%s=%s: zfs accepts %s", name, value, strings.Join(def.values, ", "))
		}
	case kindCreate:
		if !creating {
			return fmt.Errorf("%s can only be set when a pool is created; pve_zfs never rebuilds an existing pool", name)
		}
		if def.values != nil && !slices.Contains(def.values, value) {
			return fmt.Errorf("%s=%s: zfs accepts %s", name, value, strings.Join(def.values, ", "))
		}
	case kindVolume:
		return fmt.Errorf("%s applies to volumes (zvols) only, not to a pool's root filesystem", name)
	case kindSize:
		if def.none && value == "none" {
			return nil
		}
		n, err := ParseNum(value)
		if err != nil {
			return fmt.Errorf("%s=%s: %w", name, value, err)
		}
		if def.check != nil {
			if err := def.check(n); err != nil {
				return fmt.Errorf("%s=%s: %w", name, value, err)
			}
		}
	case kindCount:
		if def.none && value == "none" {
			return nil
		}
		if _, err := strconv.ParseUint(value, 10, 64); err != nil {
			return fmt.Errorf("%s=%s: expected a whole number or none", name, value)
		}
	}
	return nil
}

// SameValue compares a value read back with `zfs get -p` (bytes for sizes,
// 0 for "none" quotas, posix for posixacl) with the value a task asked for,
// so that recordsize=1M, quota=10G and acltype=posixacl converge instead of
// being set again on every run.
func SameValue(name, have, want string) bool {
	name = CanonicalProp(name)
	def := props[name]
	switch def.kind {
	case kindSize, kindCount:
		h, herr := numOrNone(have)
		w, werr := numOrNone(want)
		if herr == nil && werr == nil {
			return h == w
		}
	case kindIndex:
		if a, ok := def.alias[want]; ok {
			want = a
		}
		if a, ok := def.alias[have]; ok {
			have = a
		}
	}
	return have == want
}

// numOrNone reads a size or count, "none" (and the "-" zfs prints for an
// unset limit) being 0, as `zfs get -p` prints it.
func numOrNone(v string) (uint64, error) {
	if v == "none" || v == "-" {
		return 0, nil
	}
	return ParseNum(v)
}

// ParseNum reads a number the way zfs does (zfs_nicestrtonum): a decimal
// number, optionally with a fraction, and a binary unit B, K, M, G, T, P, E
// (optionally followed by B or iB: 1M = 1MB = 1MiB = 1048576). Fractions
// are rounded down to whole bytes, as zfs does.
func ParseNum(v string) (uint64, error) {
	s := strings.TrimSpace(v)
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	num, unit := s[:i], strings.ToUpper(s[i:])
	if num == "" || strings.Count(num, ".") > 1 {
		return 0, fmt.Errorf("%q is not a number (bytes, or with a unit: 128K, 1M, 10G)", v)
	}
	shift := 0
	if unit != "" {
		at := strings.IndexByte("BKMGTPE", unit[0])
		rest := unit[1:]
		if at < 0 || !(rest == "" || at > 0 && (rest == "B" || rest == "IB")) {
			return 0, fmt.Errorf("%q has an unknown unit (B, K, M, G, T, P or E)", v)
		}
		shift = 10 * at
	}
	if !strings.Contains(num, ".") {
		n, err := strconv.ParseUint(num, 10, 64)
		if err != nil || shift > 0 && n > math.MaxUint64>>shift {
			return 0, fmt.Errorf("%q is too large", v)
		}
		return n << shift, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", v)
	}
	f *= math.Pow(2, float64(shift))
	if f >= math.MaxUint64 {
		return 0, fmt.Errorf("%q is too large", v)
	}
	return uint64(f), nil
}

// nicenum renders bytes with a binary unit, for messages.
func nicenum(n uint64) string {
	for _, u := range []struct {
		s     string
		shift uint
	}{{"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatUint(n>>u.shift, 10) + u.s
		}
	}
	return strconv.FormatUint(n, 10)
}

// CreateOnly tells the properties zfs fixes when a filesystem is created
// (casesensitivity, normalization, utf8only, encryption, keyformat).
func CreateOnly(name string) bool { return props[CanonicalProp(name)].kind == kindCreate }
