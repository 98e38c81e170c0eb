package sim

import (
	"context"
	"testing"

	athrift "github.com/apache/thrift/lib/go/thrift"

	tc "github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

// TestSessionCallsCheckTheSecret: every session call checks the session
// handle's secret, as operation calls check theirs: a handle with the
// right GUID and a zero secret neither closes the session nor runs a
// statement on it, lenient operation handles or not.
func TestSessionCallsCheckTheSecret(t *testing.T) {
	for _, lenient := range []bool{false, true} {
		s := startSim(t, Options{LenientHandles: lenient})
		ctx := context.Background()
		trans, err := athrift.NewTHttpClientWithOptions(s.URL()+"/sql/1.0/warehouses/"+s.WarehouseIDs()[0], athrift.THttpClientOptions{Client: httpClient(t)})
		if err != nil {
			t.Fatal(err)
		}
		trans.(*athrift.THttpClient).SetHeader("Authorization", "Bearer "+s.Token())
		c := tc.NewTCLIServiceClientFactory(trans, athrift.NewTBinaryProtocolFactoryConf(nil))
		or, err := c.OpenSession(ctx, &tc.TOpenSessionReq{})
		if err != nil || or.Status.StatusCode != tc.TStatusCode_SUCCESS_STATUS {
			t.Fatalf("OpenSession: %+v %v", or, err)
		}
		forged := &tc.TSessionHandle{SessionId: &tc.THandleIdentifier{GUID: or.SessionHandle.SessionId.GUID, Secret: make([]byte, 16)}}
		er, err := c.ExecuteStatement(ctx, &tc.TExecuteStatementReq{SessionHandle: forged, Statement: "SELECT 1"})
		if err != nil || er.Status.StatusCode != tc.TStatusCode_INVALID_HANDLE_STATUS {
			t.Errorf("lenient=%v: ExecuteStatement with a zero secret: %+v %v, want INVALID_HANDLE", lenient, er.GetStatus(), err)
		}
		cr, err := c.CloseSession(ctx, &tc.TCloseSessionReq{SessionHandle: forged})
		if err != nil || cr.Status.StatusCode != tc.TStatusCode_INVALID_HANDLE_STATUS {
			t.Errorf("lenient=%v: CloseSession with a zero secret: %+v %v, want INVALID_HANDLE", lenient, cr.GetStatus(), err)
		}
		// The real session is untouched: it still runs and closes.
		er, err = c.ExecuteStatement(ctx, &tc.TExecuteStatementReq{SessionHandle: or.SessionHandle, Statement: "SELECT 1"})
		if err != nil || er.Status.StatusCode != tc.TStatusCode_SUCCESS_STATUS {
			t.Errorf("lenient=%v: the real session after the forged close: %+v %v", lenient, er.GetStatus(), err)
		}
		cr, err = c.CloseSession(ctx, &tc.TCloseSessionReq{SessionHandle: or.SessionHandle})
		if err != nil || cr.Status.StatusCode != tc.TStatusCode_SUCCESS_STATUS {
			t.Errorf("lenient=%v: CloseSession with the real handle: %+v %v", lenient, cr.GetStatus(), err)
		}
	}
}
