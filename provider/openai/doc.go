// Package openai is a [provider.Provider] for OpenAI-compatible Chat
// Completions servers — OpenAI itself, Ollama, vLLM and llama.cpp — spoken
// over net/http: POST {BaseURL}/chat/completions with a bearer key (none
// when no key is set). [Options.BaseURL] (the CLI's --base-url) selects the
// server, for example http://localhost:11434/v1 for Ollama. It links no
// SDK, so that every norma process, a command hook's included, starts
// without the SDK's package initialization.
//
// Every turn is streamed ("data: {...}" chunks ending with "data: [DONE]"):
// content deltas go to the onText callback as they arrive, and tool_calls
// deltas are joined by index into complete calls whose arguments must form
// one JSON object. The usage chunk is requested with
// stream_options.include_usage unless [Options.NoStreamUsage] is set.
//
// Mapping of the conversation: the system prompt is the first message with
// role "system"; tools are declared as function tools; assistant tool_use
// blocks become tool_calls; each tool_result block becomes its own
// role "tool" message carrying tool_call_id, placed right after the
// assistant message, with "ERROR: " prefixed to the content when IsError is
// set (the API has no error flag). Tool output never enters the system
// message.
//
// finish_reason maps as: tool_calls (and the legacy function_call) to
// tool_use, stop to end_turn, length to max_tokens, content_filter to
// end_turn; a turn carrying tool calls reports tool_use whatever the server
// said, since some servers answer "stop". A tool call whose arguments were
// cut off by the length limit is dropped rather than run with a guessed
// input; a call without an id (some local servers) gets a generated one.
//
// Tool names the API would refuse (Norma's plugin tools contain dots) are
// sent under a sanitized, hash-suffixed name and mapped back.
//
// There are no built-in retries and nothing is read from the environment
// (OPENAI_API_KEY, OPENAI_BASE_URL, ...): a key set for api.openai.com is
// never sent to a local server by accident. Wrap the provider with
// [provider.WithRetry] for retries. Failures are [*provider.APIError]
// values with the key removed.
package openai
