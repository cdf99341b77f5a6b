module github.com/norma-run/norma/bench

go 1.26.8

replace github.com/norma-run/norma => ../

require (
	github.com/cedar-policy/cedar-go v1.9.1
	github.com/norma-run/norma v0.0.0-00010101000000-000000000000
)

require (
	github.com/bmatcuk/doublestar/v4 v4.10.4 // indirect
	github.com/go-json-experiment/json v1.27.2 // indirect
	github.com/goccy/go-yaml v1.19.2 // indirect
	github.com/gowebpki/jcs v1.0.2 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	golang.org/x/exp v0.0.0-20220921023135-46d9e7742f1e // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)
