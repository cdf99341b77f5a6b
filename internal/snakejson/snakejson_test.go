package snakejson

import "testing"

func TestKey(t *testing.T) {
	for in, want := range map[string]string{
		"manifestDigest": "manifest_digest", "ChainVerified": "chain_verified", "AuditDB": "audit_db",
		"landlockABI": "landlock_abi", "ABIVersion": "abi_version", "cgroupV2": "cgroup_v2", "cgroupPidsV1": "cgroup_pids_v1",
		"toolUseId": "tool_use_id", "already_snake": "already_snake", "event": "event",
		// Not camelCase: left for the test to catch, never rewritten.
		"NODE_ENV": "NODE_ENV", "SHARED": "SHARED", "1.4.0": "1.4.0", "filesystem.read": "filesystem.read", "ID": "ID",
	} {
		if got := Key(in); got != want {
			t.Errorf("Key(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestConvertVerbatim(t *testing.T) {
	got, err := Convert(map[string]any{"runId": "r", "env": map[string]string{"myVar": "x"}, "list": []any{map[string]int{"useCount": 1}}},
		map[string]bool{"env": true})
	if err != nil {
		t.Fatal(err)
	}
	m := got.(map[string]any)
	if m["run_id"] != "r" || m["env"].(map[string]any)["myVar"] != "x" || m["list"].([]any)[0].(map[string]any)["use_count"] == nil {
		t.Errorf("Convert = %v", got)
	}
}
