# A minimal Claude Code command hook: read the JSON, answer allow.
import json, sys
json.load(sys.stdin)
sys.stdout.write(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}))
