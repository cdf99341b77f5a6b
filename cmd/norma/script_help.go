package main

// scriptFormatHelp describes the file --script names, for `norma run
// --help`: the format of package provider/scripted (see its Parse). Every
// example in it (each block indented by four spaces) parses with
// scripted.Parse, and its built-in tools' inputs fit their schemas
// (script_help_test.go).
const scriptFormatHelp = `Script format (--script FILE): the scripted provider plays the model's turns
from a YAML file, so a run needs no model and no API key; --script alone
chooses it. Each turn's tool calls go through the gate as a model's would
(decided, asked, run and audited) and their results go back into the
conversation, but the script does not read them: the next turn is played
whatever they were. The PROMPT is still required, and not read either. The
run ends after the last turn.

    turns:
      - text: "Reading the README."
        tool_calls:
          - {id: t1, name: Read, input: {path: README.md}}
      - tool_calls:
          - {id: t2, name: Bash, input: {command: "git status"}}
          - id: t3
            name: Write
            input:
              path: notes.md
              content: "# Notes\n"
      - text: "Done."

A turn has text, tool_calls or both. A tool call has an id (unique in the
script), a name (a built-in tool such as Read, Bash, Grep or WebFetch, or a
plugin's tool as the run lists it, mcp__PLUGIN__TOOL) and an input: the
tool's JSON input written as a YAML mapping ({} when left out). JSON is
YAML too: {"turns": [{"text": "hi"}]} is a script.

sampling (optional) answers, in order, the sampling requests of plugins'
MCP servers, when your settings allow them (mcp.sampling):

    turns:
      - tool_calls:
          - {id: s1, name: mcp__notes__summarize, input: {path: intro.md}}
      - text: "Summarized."
    sampling:
      - "A short summary of the intro."

The file is read strictly: one YAML document of at most 4 MiB, no unknown
field, duplicate key or tag, no empty turn, no tool call without an id or
a name, no id used twice, and every input a mapping. A mistake is reported
as FILE:LINE:COL: message, and nothing runs (exit 1). "norma run --resume
RUN --script FILE" continues with the turns after those the run played.`
