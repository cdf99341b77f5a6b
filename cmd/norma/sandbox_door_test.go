package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/norma-run/norma/sandbox"
	"github.com/norma-run/norma/sandbox/sandboxpolicy"
	"github.com/norma-run/norma/sandbox/sandboxtest"
)

// TestDoorSandboxMemory: through the built binary, `sandbox doctor` reports
// the memory limit a sandboxed run actually had (the default of plugins
// and Bash), and `sandbox exec --memory 256M` stops a shell that builds a
// 600 MB string: the allocation never completes and norma says why, while
// the control with --memory 0 completes it.
func TestDoorSandboxMemory(t *testing.T) {
	sandboxtest.Require(t)
	code, out, errs := door(t, "sandbox", "doctor", "--json")
	if code != 0 {
		t.Fatalf("sandbox doctor: exit %d\n%s%s", code, out, errs)
	}
	var rep struct {
		Mechanism string `json:"memory_mechanism"`
		Limit     struct {
			Bytes     uint64 `json:"bytes"`
			Mechanism string `json:"mechanism"`
		} `json:"memory_limit"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	if rep.Limit.Bytes != sandboxpolicy.DefaultMemory || rep.Limit.Mechanism == "" || rep.Limit.Mechanism != rep.Mechanism {
		t.Fatalf("doctor: memory_limit %+v, memory_mechanism %q; want %d bytes by the host's mechanism", rep.Limit, rep.Mechanism, uint64(sandboxpolicy.DefaultMemory))
	}
	if _, text, _ := door(t, "sandbox", "doctor"); !strings.Contains(text, "memory limit      4 GiB of ") {
		t.Errorf("doctor text does not show the memory limit in force:\n%s", text)
	}

	const hog = `x=$(head -c 600000000 /dev/zero | tr '\0' a); echo "built ${#x}"`
	code, out, errs = door(t, "sandbox", "exec", "--memory", "256M", "--", "sh", "-c", hog)
	if code == 0 || strings.Contains(out, "built") {
		t.Fatalf("sandbox exec --memory 256M: exit %d, %q; the 600 MB string was built\n%s", code, out, errs)
	}
	if sandbox.MemoryMechanism(rep.Mechanism) == sandbox.MemoryRlimitAS {
		// The shell's allocation fails with ENOMEM; it says so itself.
		t.Logf("RLIMIT_AS: exit %d, %s", code, strings.TrimSpace(errs))
	} else if code != 128+9 || !strings.Contains(errs, "norma: sandbox: memory limit exceeded: 256 MiB of resident memory for the whole tree") {
		t.Fatalf("sandbox exec --memory 256M: exit %d, stderr %q; want 137 and norma's memory-limit message", code, errs)
	}
	if code, out, errs := door(t, "sandbox", "exec", "--memory", "0", "--", "sh", "-c", hog); code != 0 || !strings.Contains(out, "built 600000000") {
		t.Fatalf("control --memory 0: exit %d, %q %s; the test proves nothing", code, out, errs)
	}
	if code, _, errs := door(t, "sandbox", "exec", "--memory", "1.5G", "--", "true"); code != exitUsage || !strings.Contains(errs, "--memory") {
		t.Errorf("--memory 1.5G: exit %d, %q; want a usage error", code, errs)
	}
}

// TestDoorRunSandboxMemory: `norma run --sandbox-memory 256M` bounds the
// Bash tool's processes: a pipeline that holds 600 MB never completes, and
// the tool result the model receives says why (with a memory cgroup) or
// carries tail's allocation failure (RLIMIT_AS). A malformed size is a
// usage error before anything runs.
func TestDoorRunSandboxMemory(t *testing.T) {
	sandboxtest.Require(t)
	e := newRunEnv(t)
	script := e.script(t, `turns:
  - tool_calls:
      - {id: b1, name: Bash, input: {command: "head -c 600000000 /dev/zero | tail -c 600000000 | wc -c"}}
  - text: done
`)
	code, out, errs := door(t, "--home", e.home, "run", "--workspace", e.ws, "--provider", "scripted",
		"--script", script, "--json", "--yes", "--sandbox-memory", "256M", "go")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	c := toolCalls(jsonLines(t, out))["b1"]
	result, _ := c["result"].(string)
	if c == nil || strings.Contains(result, "600000000") {
		t.Fatalf("b1 = %v: the pipeline held 600 MB under --sandbox-memory 256M", c)
	}
	want := "[memory limit exceeded; the kernel killed a process of the command]"
	if sandbox.Probe().Memory == sandbox.MemoryRlimitAS {
		want = "tail:"
	}
	if !strings.Contains(result+fmt.Sprint(c["message"]), want) {
		t.Fatalf("b1 = %v, want %q in what the model receives", c, want)
	}
	if code, _, errs := door(t, "--home", e.home, "run", "--workspace", e.ws, "--provider", "scripted",
		"--script", script, "--sandbox-memory", "lots", "go"); code != exitUsage || !strings.Contains(errs, "--sandbox-memory") {
		t.Errorf("--sandbox-memory lots: exit %d, %q; want a usage error", code, errs)
	}
}
