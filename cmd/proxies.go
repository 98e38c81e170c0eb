package cmd

import (
	"fmt"
	"strings"

	"github.com/dbxtop/dbxtop/proxy/adminapi"
)

// proxyTargets turns the --proxy specs into the proxies to read at each
// refresh, with token the admin token of every one (DBXTOP_PROXY_TOKEN).
// static are those given by admin URL (the Vector Search account is read
// from them).
func proxyTargets(specs []string, token string) (adminapi.Targets, []adminapi.Target, error) {
	var static adminapi.StaticTargets
	for _, s := range specs {
		if strings.HasPrefix(s, "dns+") || strings.HasPrefix(s, "file:") {
			return nil, nil, fmt.Errorf("--proxy %s: discovery of proxies is not available in this build", s)
		}
		if _, err := adminapi.NewAdminClient(s, token, ""); err != nil {
			return nil, nil, err
		}
		static = append(static, adminapi.Target{URL: s, Token: token})
	}
	return static, static, nil
}
