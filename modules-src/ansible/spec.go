package ansible

import "time"

// Type is an option type, with AnsibleModule's names and coercion rules.
type Type string

// The option types AnsibleModule knows and this package implements.
const (
	TypeStr   Type = "str"   // scalars are converted to their string form
	TypeInt   Type = "int"   // ints, numeric strings ("5"), floats without fraction
	TypeFloat Type = "float" // floats, ints, numeric strings
	TypeBool  Type = "bool"  // yes/no/on/off/true/false/y/n/t/f/1/0/1.0/0.0, any case
	TypeList  Type = "list"  // lists; a string is split on commas; other scalars become [x]
	TypeDict  Type = "dict"  // dicts; a string is JSON or "k=v, k2=v2"
	TypePath  Type = "path"  // str with ~ and $VARS expanded
	TypeRaw   Type = "raw"   // anything, untouched
)

// GroupAPI is the action group of modules that talk to the PVE API, so users
// can set connection options once with module_defaults: group/gopve.proxmox.api.
const GroupAPI = "gopve.proxmox.api"

// Module is one Ansible module: its documentation, argument spec and code.
type Module struct {
	// Name is the short module name, e.g. "pve_base" (FQCN gopve.proxmox.pve_base).
	Name string
	// ShortDescription is the one-line summary shown by ansible-doc -l.
	ShortDescription string
	// Description is the longer documentation, one paragraph per element.
	Description []string
	// Notes are extra documentation paragraphs (ansible-doc "NOTES").
	Notes []string
	// Requirements lists what the target needs (e.g. "Proxmox VE 8 or 9").
	Requirements []string
	// Examples is the EXAMPLES YAML (a list of tasks), verbatim.
	Examples string
	// Return is the RETURN YAML documenting module-specific result keys,
	// verbatim. The runtime documents `changes` itself.
	Return string
	// ActionGroups lists the action groups this module belongs to (GroupAPI).
	ActionGroups []string

	// Spec is the argument spec.
	Spec Spec

	// Timeout is the default deadline for the whole run; 0 means no deadline.
	// Users override it with the `timeout` option the runtime adds to every
	// module (TimeoutOption).
	Timeout time.Duration

	// CreatedEarlier gives the module the runtime's created_earlier option
	// (CreatedEarlierOption): what earlier tasks of the run create, which a
	// check run may assume with Run.NotYet and nothing else.
	CreatedEarlier bool

	// Params is a zero value of the struct Run.Decode fills (e.g. params{}).
	// Check compares its `ansible` tags with Spec both ways, so an option
	// nobody reads or a field no option fills is caught by the registry
	// test, not by a user.
	Params any

	// Run is the module: decode params, then observe/plan in stages (Run.Stage).
	// A returned error fails the task with err.Error() as msg.
	Run func(r *Run) error
}

// Spec is an argument spec: the options and the constraints between them.
// It mirrors AnsibleModule's argument_spec and its keyword arguments.
type Spec struct {
	Options map[string]Option
	Constraints
	// Fragments are option sets documented once, in the collection's
	// plugins/doc_fragments, instead of in every module's docs. Their
	// options are in Options too (validation does not look here); Check
	// makes sure each is there exactly as the fragment documents it.
	Fragments []DocFragment
}

// Constraints are the relations between options of one level (top level,
// or the sub-options of a dict/list-of-dicts option).
type Constraints struct {
	// MutuallyExclusive: in each group, at most one option may be set.
	MutuallyExclusive [][]string
	// RequiredTogether: in each group, all or none must be set.
	RequiredTogether [][]string
	// RequiredOneOf: in each group, at least one must be set.
	RequiredOneOf [][]string
	// RequiredIf: when an option has a value, others become required.
	RequiredIf []RequiredIf
	// RequiredBy: when the key option is set, the listed options must be too.
	RequiredBy map[string][]string
}

// RequiredIf is one required_if rule: if Key == Value then Requirements must
// be set (all of them, or at least one when Any is true).
type RequiredIf struct {
	Key          string
	Value        any
	Requirements []string
	Any          bool
}

// StrOption, IntOption, BoolOption, ListOption (of strings) and
// DictOption are the plain options most of a spec is made of: a type and
// the documentation, one paragraph per argument.
func StrOption(desc ...string) Option  { return Option{Type: TypeStr, Description: desc} }
func IntOption(desc ...string) Option  { return Option{Type: TypeInt, Description: desc} }
func BoolOption(desc ...string) Option { return Option{Type: TypeBool, Description: desc} }
func ListOption(desc ...string) Option {
	return Option{Type: TypeList, Elements: TypeStr, Description: desc}
}
func DictOption(desc ...string) Option { return Option{Type: TypeDict, Description: desc} }

// Option describes one option, like an argument_spec entry.
type Option struct {
	// Description is the documentation, one paragraph per element. Required
	// for documentation generation.
	Description []string
	// Type defaults to TypeStr, as in AnsibleModule.
	Type Type
	// Elements is the element type of a TypeList option.
	Elements Type
	// Required fails validation when the option is missing (or null).
	Required bool
	// Default is used when the option is missing. Not allowed with Required.
	Default any
	// Choices restricts the (coerced) value, or each element of a list.
	Choices []any
	// Aliases are alternative names.
	Aliases []string
	// NoLog masks the value everywhere in the result and logs. Documented
	// in prose by the docs generator (no_log is not a documentation key).
	NoLog bool
	// EnvFallback lists environment variables tried in order when the option
	// is not given (AnsibleModule's env_fallback).
	EnvFallback []string

	// Options are the sub-options of a TypeDict option or of a TypeList option
	// whose Elements is TypeDict.
	Options map[string]Option
	// ApplyDefaults applies sub-option defaults even when the dict option
	// itself is not given (AnsibleModule's apply_defaults).
	ApplyDefaults bool
	// Constraints between the sub-options.
	Constraints
}
