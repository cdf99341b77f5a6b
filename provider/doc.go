// Package provider defines the provider-neutral vocabulary of one model turn
// and the [Provider] interface that the agent session loop consumes.
//
// A [Request] carries the system prompt, the conversation as [Message]s of
// [Block]s (text, tool_use, tool_result), the declared tools and a token
// limit. A [Response] carries the model's blocks, a normalized stop reason
// (one of [StopEndTurn], [StopToolUse], [StopMaxTokens], [StopStopSequence])
// and token [Usage].
//
// Implementations live in subpackages: provider/anthropic (Messages API),
// provider/openai (OpenAI-compatible Chat Completions: OpenAI, Ollama, vLLM,
// llama.cpp) and provider/scripted (offline turns read from YAML).
//
// Tool results are data. Providers deliver them as tool_result blocks (or
// role "tool" messages) and never merge them into the system prompt.
//
// [WithRetry] wraps any Provider with retries on rate limits and server
// errors, honouring Retry-After. Providers report HTTP failures as
// [*APIError], whose message has had the API key removed.
//
// API keys are passed in by the caller (who reads them from the environment
// or the secret vault) as an [APIKey], which redacts itself when printed or
// logged. Nothing in this package or its subpackages reads the environment.
package provider
