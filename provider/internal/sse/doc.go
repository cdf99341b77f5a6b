// Package sse reads a server-sent event stream (the text/event-stream
// format of the HTML standard) as the model APIs send it: the Anthropic
// Messages API ("event: message_start" with a JSON "data:" line) and the
// OpenAI Chat Completions API ("data:" lines only, ending with
// "data: [DONE]").
//
// [Reader.Next] returns one event per blank-line-terminated block: its
// "event" field (empty when the block had none) and its "data" lines joined
// by "\n". Comment lines (":" first) and the "id" and "retry" fields are
// skipped, a block without data is not an event, lines may end in "\n",
// "\r\n" or "\r", one space after the colon is dropped, and a final block
// without its blank line is still returned. A line longer than
// [MaxLine] fails the stream with [ErrLineTooLong] rather than growing
// without bound.
//
// It decodes nothing inside the data: each provider unmarshals its own
// events.
package sse
