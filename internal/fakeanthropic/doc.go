// Package fakeanthropic is a loopback fake of the Anthropic Messages API,
// for tests that drive a real client (Claude Code) offline.
//
// A [Server] answers POST /v1/messages from a script: a list of [Turn]s,
// each a list of text and tool_use [Block]s. The turn a request gets is
// the number of assistant messages already in its conversation, so a
// client's retries and its own request order never shift the script; a
// conversation longer than the script ends with a short end_turn text.
// Each turn's message has an id of its own (msg_fake_N), as a client
// merges the streamed parts of one message by its id.
// Requests that offer no tools (a client's side queries: titles, topic
// checks) get a short text and take no turn.
//
// Streaming requests (stream: true) are answered with the SSE events the
// real API sends (message_start, content_block_start, content_block_delta
// with text_delta or input_json_delta, content_block_stop, message_delta
// with stop_reason and usage, message_stop); other requests get the same
// message as one JSON body. POST /v1/messages/count_tokens answers a token
// count. Anything else is a 404. Claude Code 2.1.332 in print mode (-p),
// with CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, calls nothing but
// POST /v1/messages?beta=true, streaming, with its tools in every request.
//
// The server records every request (method, path, headers, body) so a test
// can read what the client sent back: the tool_result blocks are where a
// refused call's text shows. The x-api-key and Authorization headers are
// never recorded.
package fakeanthropic
