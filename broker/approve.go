package broker

import (
	"encoding/json"

	"github.com/norma-run/norma/approval"
)

// ToolNetRequest is the tool name under which brokered requests are
// approved and audited: the Tool of the approval.Request the broker asks
// its [Config.Approver] about.
const ToolNetRequest = "net.request"

// ActionHash returns the approval action hash of a brokered request: the
// canonical hash ([approval.HashAction]) of the plugin identity (with its
// run and workspace) and the
// input {"method", "url", "bodySha256"}. Any change of method, URL (query
// included) or body changes it. It fails when the identity has no RunID.
func ActionHash(id Identity, method, url, bodyDigest string) (string, error) {
	in, err := json.Marshal(struct {
		Method string `json:"method"`
		URL    string `json:"url"`
		Body   string `json:"bodySha256"`
	}{method, url, bodyDigest})
	if err != nil {
		return "", err
	}
	return approval.HashAction(approval.Action{
		Plugin: id.Plugin, Version: id.Version, ManifestDigest: id.ManifestDigest,
		Tool: ToolNetRequest, Input: in, RunID: id.RunID, Workspace: id.Workspace,
	})
}
