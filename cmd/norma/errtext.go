package main

import (
	"errors"

	"github.com/norma-run/norma/capability"
)

// errText is err as the operator reads it on stderr and in `--json`
// output: the public message, then the internal cause of each
// *capability.Error in the chain (an errno, a parse error), which
// Error never shows because an agent may read it. The operator is who
// these causes are kept for; everything an agent sees is Error's text.
func errText(err error) string {
	if err == nil {
		return ""
	}
	s := err.Error()
	for ce, ok := errors.AsType[*capability.Error](err); ok && ce.Err != nil; ce, ok = errors.AsType[*capability.Error](ce.Err) {
		s += ": " + ce.Err.Error()
	}
	return s
}
