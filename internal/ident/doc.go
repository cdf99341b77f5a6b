// Package ident checks identifier syntax — a first byte from one set, then
// bytes from another, up to a length — without regular expressions:
// compiling a counted repetition such as [A-Za-z0-9_-]{0,63} cost each
// start of norma more than the check itself ever does (issue 20).
package ident
