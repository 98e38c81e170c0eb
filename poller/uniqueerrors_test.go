package poller

import (
	"testing"

	"github.com/dbxtop/dbxtop/model"
)

func TestUniqueErrorsDropsRepeats(t *testing.T) {
	proxyErr := model.ErrorInfo{Kind: model.KindPermanent, Call: "ProxyOperations", HTTPStatus: 401, Message: "the proxy refused DBXTOP_PROXY_TOKEN"}
	other := model.ErrorInfo{Kind: model.KindTransport, Call: "ListEndpoints", Message: "connection reset"}
	got := uniqueErrors([]model.ErrorInfo{proxyErr, proxyErr, other})
	if len(got) != 2 || got[0].Call != "ProxyOperations" || got[1].Call != "ListEndpoints" {
		t.Fatalf("got %+v", got)
	}
}
