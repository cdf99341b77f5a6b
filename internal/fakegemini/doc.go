// Package fakegemini is a loopback fake of the Gemini API
// (generativelanguage.googleapis.com, v1beta), for tests that drive a
// real client (Gemini CLI) offline.
//
// A [Server] answers POST /VERSION/models/MODEL:streamGenerateContent
// and :generateContent from a script: a list of [Turn]s, each a list of
// text and functionCall [Part]s. The turn a request gets is the number of
// model contents already in its conversation, so a client's retries
// never shift the script; a conversation longer than the script ends
// with a short text. Requests that offer no tools (a client's side
// queries) get a short text and take no turn. :countTokens answers a
// token count; anything else is a 404 in the API's error shape.
//
// Each functionCall carries an id of its own, [CallID] (call_fake_T_I),
// which a client echoes in its functionResponse: Gemini CLI 0.61 keeps a
// call's id as NAME__ID (run_shell_command__call_fake_0_1), and
// [Server.FunctionResponses] finds the fake's id in either.
//
// streamGenerateContent with alt=sse (what Gemini CLI sends) is answered
// as the API streams: one "data: RESPONSE" event per part, each a
// GenerateContentResponse with one candidate, the last one carrying
// finishReason STOP and usageMetadata (Gemini CLI retries a stream that
// ends without a finish reason). Without alt=sse the same responses come
// as one JSON array; :generateContent gets them merged into one.
//
// Gemini CLI 0.61.0 reaches the fake with GOOGLE_GEMINI_BASE_URL set to
// [Server.URL], GEMINI_API_KEY set and security.auth.selectedType
// "gemini-api-key" in its settings; given a model (-m), it calls nothing
// but :streamGenerateContent?alt=sse, with its tools in every request.
// Without one, its model router first asks a classifier
// (:generateContent, no tools) for a JSON verdict the fake does not give.
//
// The server records every request (method, path, query, headers, body)
// so a test can read what the client sent back: the functionResponse
// parts are where a refused call's text shows. The x-goog-api-key and
// Authorization headers and the key query parameter are never recorded.
package fakegemini
