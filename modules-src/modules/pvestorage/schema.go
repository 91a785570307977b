package pvestorage

// optSchema is one storage option as the official API schema of a PVE
// version describes it (POST /storage), reduced to what validation and
// comparison need. The tables are generated from the lab's embedded copy of
// the schema (schema_gen_test.go, `go test -run TestSchemaTable -update`),
// so the shipped binary carries them without importing the lab.
type optSchema struct {
	Type        string   // string, integer, boolean, number
	Format      string   // a named PVE format; "property-string" for key=value lists
	Keys        []string // the keys of a property string
	Enum        []string
	Pattern     string
	Min, Max    *float64
	MaxLength   int
	Default     string // PVE's default, as the schema writes it
	Updatable   bool   // also a parameter of PUT /storage/{storage}
	Description string // first line
}

func schemaFor(version int) map[string]optSchema {
	if version >= 9 {
		return schemaV9
	}
	return schemaV8
}

func ptr(f float64) *float64 { return &f }
