package mcpadd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"

	"github.com/norma-run/norma/internal/keycase"
)

// ServerConfig is one server of an MCP client's configuration file.
type ServerConfig struct {
	Name    string
	Command string
	Args    []string
	Env     map[string]string
	// Remote is set for a server reached over HTTP or SSE (its URL), which
	// `norma mcp import` does not support: Norma confines local processes.
	Remote string
}

// serverEntry is a server as Claude Code/Cursor (.mcp.json), Gemini
// (settings.json) and Codex (config.toml) write it.
type serverEntry struct {
	Command string            `json:"command" toml:"command"`
	Args    []string          `json:"args" toml:"args"`
	Env     map[string]string `json:"env" toml:"env"`
	Type    string            `json:"type" toml:"type"`
	URL     string            `json:"url" toml:"url"`
	HTTPURL string            `json:"httpUrl" toml:"http_url"`
}

// ParseConfig reads the servers of file: JSON with mcpServers (Claude
// Code and Cursor .mcp.json, Gemini settings.json), or TOML with
// [mcp_servers.NAME] (Codex config.toml, by its .toml extension). A
// syntax error names FILE:LINE:COL. Servers come sorted by name.
func ParseConfig(file string) ([]ServerConfig, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var servers map[string]serverEntry
	if strings.EqualFold(filepath.Ext(file), ".toml") {
		servers, err = parseTOML(file, b)
	} else {
		servers, err = parseJSON(file, b)
	}
	if err != nil {
		return nil, err
	}
	if len(servers) == 0 {
		return nil, fmt.Errorf("%s: no MCP servers (want mcpServers in JSON or [mcp_servers.NAME] in TOML)", file)
	}
	var out []ServerConfig
	for _, name := range sortedKeys(servers) {
		out = append(out, servers[name].config(name))
	}
	return out, nil
}

func (e serverEntry) config(name string) ServerConfig {
	c := ServerConfig{Name: name, Command: e.Command, Args: e.Args, Env: e.Env}
	switch {
	case e.HTTPURL != "":
		c.Remote = e.HTTPURL
	case e.URL != "":
		c.Remote = e.URL
	case e.Type == "http" || e.Type == "sse" || e.Type == "streamable-http":
		c.Remote = e.Type
	}
	return c
}

func parseTOML(file string, b []byte) (map[string]serverEntry, error) {
	var doc struct {
		Servers map[string]serverEntry `toml:"mcp_servers"`
	}
	var raw map[string]any
	if _, err := toml.Decode(string(b), &raw); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s:%d:%d: %s", file, pe.Position.Line, pe.Position.Col, pe.Message)
		}
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	// The client reads exact keys; the decoder below would also take
	// "Command" for command.
	if err := keycase.Value(raw); err != nil {
		return nil, fmt.Errorf("%s: %v: the client and Norma would read different servers", file, err)
	}
	if _, err := toml.Decode(string(b), &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return doc.Servers, nil
}

func parseJSON(file string, b []byte) (map[string]serverEntry, error) {
	var doc struct {
		Servers map[string]serverEntry `json:"mcpServers"`
	}
	err := json.Unmarshal(b, &doc)
	if err == nil {
		// The client reads exact keys; encoding/json also took
		// "Command" for command.
		if kerr := keycase.JSON(b); kerr != nil {
			return nil, fmt.Errorf("%s: %v: the client and Norma would read different servers", file, kerr)
		}
	}
	if err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("%s:%s: %v", file, lineCol(b, se.Offset), err)
		case errors.As(err, &te):
			return nil, fmt.Errorf("%s:%s: %s is a %s, want %s", file, lineCol(b, te.Offset), te.Field, te.Value, te.Type)
		}
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return doc.Servers, nil
}

// lineCol is the 1-based LINE:COL of the byte after the first off bytes
// of b (encoding/json's offsets).
func lineCol(b []byte, off int64) string {
	off = min(max(off, 0), int64(len(b)))
	before := b[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return fmt.Sprintf("%d:%d", line, col)
}

var envRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`) })

// ExpandHostEnv replaces ${VAR} and ${VAR:-default} in s with the host's
// VAR, as the MCP clients do; a VAR that is unset and has no default is
// an error. Unless the value is a secret's (it then goes to the vault), a
// VAR whose name looks like a credential (${AWS_SECRET_ACCESS_KEY}) is
// refused: a client's file must not pull the user's credentials into a
// plain variable, which the manifest holds in clear.
func ExpandHostEnv(s string, secret bool, lookup func(string) (string, bool)) (string, error) {
	var missing, creds []string
	out := envRef().ReplaceAllStringFunc(s, func(ref string) string {
		m := envRef().FindStringSubmatch(ref)
		if !secret && LooksLikeCredential(m[1]) {
			creds = append(creds, m[1])
			return ""
		}
		if v, ok := lookup(m[1]); ok && v != "" {
			return v
		}
		if m[2] != "" {
			return m[3]
		}
		missing = append(missing, m[1])
		return ""
	})
	if len(creds) > 0 {
		return "", fmt.Errorf("%w: ${%s} looks like a credential and the variable is not declared a secret; "+
			"its value would be written into the plugin's manifest in clear (declare it: --secret K=ORIGIN)", ErrCredential, creds[0])
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return "", fmt.Errorf("${%s} is not set in the environment", strings.Join(slices.Compact(missing), "}, ${"))
	}
	return out, nil
}
