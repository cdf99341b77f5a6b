package gate

// CompileSchemaValidating compiles doc validating it against its
// metaschema, whether or not it is known valid.
func CompileSchemaValidating(name string, doc []byte) (*Schema, error) {
	return compileSchema(name, doc, false)
}

// ValidSchemaSums are validschemas.go's digests.
func ValidSchemaSums() [][32]byte { return validSchemas[:] }
