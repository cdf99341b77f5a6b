// Package anthropic is a [provider.Provider] for the Anthropic Messages API,
// built on github.com/anthropics/anthropic-sdk-go.
//
// Every turn is streamed: text deltas go to the onText callback as they
// arrive, and tool_use input arrives as input_json_delta fragments that are
// joined and checked to be one JSON object. Tool results go back as
// tool_result blocks with is_error set; the system prompt travels in the
// separate "system" field and is never mixed with tool output.
//
// Stop reasons map as: end_turn, tool_use, max_tokens and stop_sequence
// unchanged; model_context_window_exceeded to max_tokens; refusal and
// pause_turn (and any future value) to end_turn, except that a turn carrying
// tool_use blocks always reports tool_use. A tool_use whose JSON input was
// cut off by max_tokens is dropped rather than run with a guessed input.
//
// Tool names that the API would refuse (Norma's plugin tools contain dots)
// are sent under a sanitized, hash-suffixed name and mapped back in the
// response.
//
// The SDK's own retries are disabled and it does not read the environment
// (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, profiles): the key and base URL come
// from [Options]. Wrap the provider with [provider.WithRetry] for retries.
// Failures from the API are [*provider.APIError] values with the key
// removed from every message.
package anthropic
