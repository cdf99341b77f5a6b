// Package fakeopenai is a loopback fake of the OpenAI Responses API, for
// tests that drive a real client (Codex CLI) offline.
//
// A [Server] answers POST .../responses from a script: a list of [Turn]s,
// each a list of text and function-call [Item]s. The turn a request gets
// is one past the last scripted turn whose output its input already
// holds (each item the fake sends carries its turn in its id and call_id:
// msg_fake_T, call_fake_T_I), so a client's retries never shift the
// script; a conversation longer than the script ends with a short text.
// Requests that offer no tools (a client's side queries) get a short text
// and take no turn.
//
// Streaming requests (stream: true, what Codex sends) are answered with
// the SSE events the real API sends, each with its sequence_number:
// response.created, response.in_progress, and for each output item
// response.output_item.added, its content (response.content_part.added,
// response.output_text.delta, response.output_text.done,
// response.content_part.done for a message; response.function_call_
// arguments.delta and .done for a function call), response.output_item.
// done; then response.completed with the response's output and usage.
// Other requests get the response as one JSON body. Anything else is a
// 404. Codex CLI 0.171.0 with a custom model provider (wire_api =
// "responses") calls nothing but POST BASE/responses, streaming, with its
// tools in every request; its shell tool is the function exec_command
// ({"cmd": "..."}).
//
// The server records every request (method, path, headers, body) so a
// test can read what the client sent back: the function_call_output
// items are where a refused call's text shows. The Authorization header
// is never recorded.
package fakeopenai
