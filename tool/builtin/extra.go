package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/gate"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/tool"
)

// Memory and skill locations in the workspace.
const (
	MemoryDir = ".norma/memory"
	SkillsDir = ".norma/skills"
	// maxMemoryBytes bounds one memory file; maxSkillBytes one SKILL.md.
	maxMemoryBytes = 1 << 20
	maxSkillBytes  = 256 << 10
)

var (
	memoryFileRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}\.md$`) })
	skillNameRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`) })
)

func memoryPath(in tool.Input) string {
	f := str(in, "file", "MEMORY.md")
	return MemoryDir + "/" + f
}

func memoryTool() tool.Spec {
	return tool.Spec{
		Name:        "Memory",
		Description: "Read or append to the workspace's memory files (.norma/memory/).",
		Prompt: "Keeps notes that outlive this session in .norma/memory/FILE (default MEMORY.md): action read returns a file, list lists the files, " +
			"append adds text at the end. Only files directly in .norma/memory/ named like notes.md are reachable, through the file guard. Never store secrets.",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["action"],"properties":{"action":{"enum":["read","append","list"]},` +
			`"file":{"type":"string","pattern":"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}\\.md$"},"content":{"type":"string","minLength":1,"maxLength":65536}}}`),
		ReadOnly:        func(in tool.Input) bool { return str(in, "action", "") != "append" },
		ConcurrencySafe: func(in tool.Input) bool { return str(in, "action", "") != "append" },
		CheckPermissions: func(ctx context.Context, in tool.Input) tool.Permission {
			if str(in, "action", "") == "append" {
				return tool.Permission{Behavior: tool.Ask, Reason: "appending to memory writes a workspace file"}
			}
			return tool.Permission{Behavior: tool.Allow}
		},
		Accesses: func(in tool.Input) ([]tool.Access, error) {
			switch str(in, "action", "") {
			case "list":
				return []tool.Access{{Kind: capability.FSRead, Path: MemoryDir}}, nil
			case "append":
				p := memoryPath(in)
				return []tool.Access{{Kind: capability.FSRead, Path: p}, {Kind: capability.FSWrite, Path: p}}, nil
			}
			return []tool.Access{{Kind: capability.FSRead, Path: memoryPath(in)}}, nil
		},
		Call: func(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
			fsys, err := needFS(env)
			if err != nil {
				return tool.Result{}, err
			}
			if f, ok := in.String("file"); ok && !memoryFileRE().MatchString(f) {
				return tool.Result{}, fail(capability.ReasonInvalidRequest, "invalid memory file name %q", f)
			}
			p := memoryPath(in)
			switch str(in, "action", "") {
			case "list":
				ents, err := fsys.ReadDir(ctx, MemoryDir)
				if err != nil {
					if capability.ReasonOf(fsErr(err)) == capability.ReasonFileNotFound {
						return tool.Result{Content: "(no memory files)"}, nil
					}
					return tool.Result{}, fsErr(err)
				}
				var names []string
				for _, e := range ents {
					if e.Type().IsRegular() && memoryFileRE().MatchString(e.Name()) {
						names = append(names, e.Name())
					}
				}
				if len(names) == 0 {
					return tool.Result{Content: "(no memory files)"}, nil
				}
				return tool.Result{Content: joinLines(names)}, nil
			case "read":
				data, err := fsys.ReadFile(ctx, p)
				if err != nil {
					return tool.Result{}, fsErr(err)
				}
				if len(data) == 0 {
					return tool.Result{Content: "(empty)"}, nil
				}
				return tool.Result{Content: strings.ToValidUTF8(string(data), "\uFFFD")}, nil
			case "append":
				text := str(in, "content", "")
				if text == "" {
					return tool.Result{}, fail(capability.ReasonInvalidRequest, "append needs content")
				}
				old, err := fsys.ReadFile(ctx, p)
				if err != nil {
					if capability.ReasonOf(fsErr(err)) != capability.ReasonFileNotFound {
						return tool.Result{}, fsErr(err)
					}
					if err := fsys.MkdirAll(ctx, MemoryDir, 0o755); err != nil {
						return tool.Result{}, fsErr(err)
					}
				}
				if len(old)+len(text)+1 > maxMemoryBytes {
					return tool.Result{}, fail(capability.ReasonFileTooLarge, "%s would exceed %d bytes; summarize it first", p, maxMemoryBytes)
				}
				buf := append([]byte(nil), old...)
				if len(buf) > 0 && buf[len(buf)-1] != '\n' {
					buf = append(buf, '\n')
				}
				buf = append(buf, text...)
				if !strings.HasSuffix(text, "\n") {
					buf = append(buf, '\n')
				}
				if err := fsys.WriteFile(ctx, p, buf, 0o644); err != nil {
					return tool.Result{}, fsErr(err)
				}
				return tool.Result{Content: fmt.Sprintf("appended %d bytes to %s", len(text), p)}, nil
			}
			return tool.Result{}, fail(capability.ReasonInvalidRequest, "unknown action")
		},
	}
}

// Skill is a parsed SKILL.md: front matter and instructions.
type Skill struct {
	Name        string
	Description string
	// Tools are deferred tools the skill asks to unlock.
	Tools        []string
	Instructions string
}

// maxFrontMatter bounds the YAML front matter of a SKILL.md.
const maxFrontMatter = 16 << 10

// ParseSkill parses a SKILL.md: an optional YAML front matter between
// "---" lines (name, description, tools: a list of tool names; other
// keys are ignored) and the instructions after it.
func ParseSkill(data []byte) (Skill, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	var s Skill
	if !strings.HasPrefix(text, "---\n") {
		s.Instructions = strings.TrimSpace(text)
		return s, nil
	}
	rest := text[4:]
	end := strings.Index(rest, "\n---\n")
	body := ""
	switch {
	case end >= 0:
		body = rest[end+5:]
	case strings.HasSuffix(rest, "\n---"):
		end = len(rest) - 4
	default:
		return s, fmt.Errorf("front matter is not closed by a --- line")
	}
	fm := rest[:end]
	if len(fm) > maxFrontMatter {
		return s, fmt.Errorf("front matter is larger than %d bytes", maxFrontMatter)
	}
	var meta struct {
		Name        string   `json:"name"`
		Description string   `json:"description"`
		Tools       []string `json:"tools"`
	}
	if strings.TrimSpace(fm) != "" {
		if err := manifest.DecodeYAML("front matter", []byte(fm), &meta); err != nil {
			return s, fmt.Errorf("%v", firstLine(err.Error()))
		}
	}
	if len(meta.Tools) > 64 {
		return s, fmt.Errorf("front matter lists %d tools; at most 64", len(meta.Tools))
	}
	for _, t := range meta.Tools {
		if !tool.ValidName(t) {
			return s, fmt.Errorf("front matter: %q is not a tool name", truncRunes(t, 80))
		}
	}
	s.Name, s.Description, s.Tools = meta.Name, meta.Description, meta.Tools
	s.Instructions = strings.TrimSpace(body)
	return s, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func skillPath(in tool.Input) string { return SkillsDir + "/" + str(in, "name", "") + "/SKILL.md" }

func skillTool(reg *tool.Registry) tool.Spec {
	return tool.Spec{
		Name:        "Skill",
		Description: "Load a skill's instructions from .norma/skills/NAME/SKILL.md.",
		Prompt: "Loads the instructions of the skill NAME (lower-case letters, digits and dashes) from .norma/skills/NAME/SKILL.md through the file guard and returns them; follow them. " +
			"A skill may name deferred tools in its front matter (tools: [...]); those become callable in this run, but every call still goes through the policy and approval like any other.",
		Schema:           json.RawMessage(`{"type":"object","additionalProperties":false,"required":["name"],"properties":{"name":{"type":"string","pattern":"^[a-z0-9][a-z0-9-]{0,63}$"}}}`),
		ReadOnly:         yes,
		CheckPermissions: allow,
		Accesses: func(in tool.Input) ([]tool.Access, error) {
			return []tool.Access{{Kind: capability.FSRead, Path: skillPath(in)}}, nil
		},
		Call: func(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
			fsys, err := needFS(env)
			if err != nil {
				return tool.Result{}, err
			}
			name := str(in, "name", "")
			if !skillNameRE().MatchString(name) {
				return tool.Result{}, fail(capability.ReasonInvalidRequest, "invalid skill name %q", name)
			}
			p := skillPath(in)
			fi, err := fsys.Stat(ctx, p)
			if err != nil {
				return tool.Result{}, fsErr(err)
			}
			if fi.Size() > maxSkillBytes {
				return tool.Result{}, fail(capability.ReasonFileTooLarge, "%s is larger than %d bytes", p, maxSkillBytes)
			}
			data, err := fsys.ReadFile(ctx, p)
			if err != nil {
				return tool.Result{}, fsErr(err)
			}
			sk, err := ParseSkill(data)
			if err != nil {
				return tool.Result{}, fail(capability.ReasonInvalidRequest, "%s: %v", p, err)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "Skill %s", name)
			if sk.Description != "" {
				fmt.Fprintf(&b, ": %s", sk.Description)
			}
			b.WriteString("\n\n")
			b.WriteString(sk.Instructions)
			if len(sk.Tools) > 0 {
				unlocked, refused := unlock(reg, env, sk.Tools)
				if len(unlocked) > 0 {
					fmt.Fprintf(&b, "\n\nTools now available (still subject to policy and approval): %s", strings.Join(unlocked, ", "))
				}
				if len(refused) > 0 {
					fmt.Fprintf(&b, "\n\nNot unlocked (not a deferred tool available to this run): %s", strings.Join(refused, ", "))
				}
			}
			return tool.Result{Content: b.String()}, nil
		},
	}
}

// unlock unlocks the deferred tools names in the caller's view, through
// the registry's own unlock API: only tools the view lists as deferred
// (and may use) are unlocked; tools already callable are reported as
// available; anything else is refused.
func unlock(reg *tool.Registry, env tool.Env, names []string) (unlocked, refused []string) {
	if reg == nil {
		return nil, names
	}
	v, err := reg.View(env.RunID, env.Principals)
	if err != nil {
		return nil, names
	}
	deferred := v.Deferred()
	for _, n := range names {
		switch {
		case slices.Contains(deferred, n):
			if v.Unlock(n) == nil {
				unlocked = append(unlocked, n)
			} else {
				refused = append(refused, n)
			}
		default:
			if _, ok := v.Lookup(n); ok {
				unlocked = append(unlocked, n)
			} else {
				refused = append(refused, n)
			}
		}
	}
	return unlocked, refused
}

// Catalog records the descriptions and schemas of deferred tools, so that
// SearchExtraTools can search them before they are unlocked (a registry
// view neither lists nor describes a locked tool). Register deferred tools
// through [Catalog.Register]. Safe for concurrent use.
type Catalog struct {
	mu sync.RWMutex
	m  map[string]catalogEntry
}

type catalogEntry struct {
	description string
	schema      json.RawMessage
}

// Register registers r in reg and, when it succeeds, records the tool's
// description and schema.
func (c *Catalog) Register(reg *tool.Registry, r tool.Registration) error {
	if err := reg.Register(r); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]catalogEntry{}
	}
	c.m[r.Tool.Name()] = catalogEntry{description: r.Tool.Description(), schema: r.Tool.InputSchema()}
	return nil
}

func (c *Catalog) get(name string) (catalogEntry, bool) {
	if c == nil {
		return catalogEntry{}, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.m[name]
	return e, ok
}

// maxSearchHits bounds SearchExtraTools results.
const maxSearchHits = 20

func searchExtraTool(reg *tool.Registry, cat *Catalog) tool.Spec {
	return tool.Spec{
		Name:        "SearchExtraTools",
		Description: "Search the deferred tools available to this run by name or description.",
		Prompt: "Searches the extra (deferred) tools that are not loaded yet: every word of query must occur in the tool's name or description (case-insensitive). " +
			"Returns names, descriptions and input schemas; call one with ExecuteExtraTool. An empty query lists them all (at most 20).",
		Schema:           json.RawMessage(`{"type":"object","additionalProperties":false,"properties":{"query":{"type":"string","maxLength":200}}}`),
		ReadOnly:         yes,
		ConcurrencySafe:  yes,
		CheckPermissions: allow,
		Accesses:         noAccess,
		Call: func(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
			if reg == nil {
				return tool.Result{}, fail(capability.ReasonHostUnavailable, "this session has no registry of extra tools")
			}
			v, err := reg.View(env.RunID, env.Principals)
			if err != nil {
				return tool.Result{}, fail(capability.ReasonHostUnavailable, "no tool view for this run")
			}
			words := strings.Fields(strings.ToLower(str(in, "query", "")))
			var b strings.Builder
			n := 0
			for _, name := range v.Deferred() {
				e, _ := cat.get(name)
				hay := strings.ToLower(name + " " + e.description)
				if !allWords(hay, words) {
					continue
				}
				if n == maxSearchHits {
					b.WriteString("(more matches not shown; refine the query)\n")
					break
				}
				n++
				fmt.Fprintf(&b, "- %s: %s\n", name, truncRunes(e.description, 500))
				if len(e.schema) > 0 {
					fmt.Fprintf(&b, "  input schema: %s\n", truncRunes(string(e.schema), 2000))
				}
			}
			if n == 0 {
				return tool.Result{Content: "no extra tools match"}, nil
			}
			return tool.Result{Content: strings.TrimSuffix(b.String(), "\n")}, nil
		},
	}
}

func allWords(hay string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(hay, w) {
			return false
		}
	}
	return true
}

// ExecuteExtraToolName is the name of the deferred-tool executor; it
// refuses to run itself.
const ExecuteExtraToolName = "ExecuteExtraTool"

func executeExtraTool(ref *GateRef) tool.Spec {
	return tool.Spec{
		Name:        ExecuteExtraToolName,
		Description: "Run a deferred tool found with SearchExtraTools.",
		Prompt: "Runs the extra tool named tool with input (an object matching that tool's input schema, as SearchExtraTools shows it). " +
			"The call goes through the same gate as every other call: the inner tool's schema, its own permission check, the policy, approval and hooks all apply, " +
			"and a refusal comes back with its reason code.",
		Schema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["tool","input"],"properties":{` +
			`"tool":{"type":"string","pattern":"^[A-Za-z][A-Za-z0-9_.-]{0,127}$"},"input":{"type":"object"}}}`),
		CheckPermissions: allow, // the inner call is judged by the gate on its own
		Accesses:         noAccess,
		Delegate: func(in tool.Input) (string, json.RawMessage, bool) {
			name := str(in, "tool", "")
			if name == ExecuteExtraToolName {
				return "", nil, false
			}
			var v struct {
				Input json.RawMessage `json:"input"`
			}
			if in.Decode(&v) != nil {
				return "", nil, false
			}
			return name, v.Input, true
		},
		Timeout: gate.DefaultTimeout * 5,
		Call: func(ctx context.Context, env tool.Env, in tool.Input) (tool.Result, error) {
			name := str(in, "tool", "")
			if name == ExecuteExtraToolName {
				return tool.Result{}, fail(capability.ReasonExtraToolRecursive, "ExecuteExtraTool cannot run itself")
			}
			g, err := ref.get()
			if err != nil {
				return tool.Result{}, err
			}
			var a struct {
				Input json.RawMessage `json:"input"`
			}
			if err := in.Decode(&a); err != nil {
				return tool.Result{}, fail(capability.ReasonInvalidRequest, "%v", err)
			}
			r := g.ExecuteExtra(ctx, gate.Call{
				ID: env.ToolUseID + ".extra", RunID: env.RunID, Principals: env.Principals,
				Tool: name, Input: a.Input,
			})
			if r.IsError {
				return tool.Result{}, &capability.Error{
					Decision: capability.Decision{Mode: capability.Deny, Reason: r.Reason, Layer: r.Decision.Layer, Rule: "extra:" + name},
					Detail:   r.Content,
				}
			}
			return tool.Result{Content: r.Content}, nil
		},
	}
}
