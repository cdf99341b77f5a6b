// Package anthropic is a [provider.Provider] for the Anthropic Messages API,
// spoken over net/http: POST {BaseURL}/v1/messages with x-api-key and
// anthropic-version 2023-06-01, and the answer read as a server-sent event
// stream (message_start, content_block_start/delta/stop, message_delta,
// message_stop; ping skipped; an error event fails the turn). It links no
// SDK, so that every norma process, a command hook's included, starts
// without the SDK's package initialization.
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
// There are no built-in retries and nothing is read from the environment
// (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, profiles): the key and base URL come
// from [Options]. Wrap the provider with [provider.WithRetry] for retries.
// Failures from the API are [*provider.APIError] values with the key
// removed from every message.
package anthropic
