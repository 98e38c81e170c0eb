package sim

import (
	"net/http"

	"github.com/apache/thrift/lib/go/thrift"
)

var thriftConf = &thrift.TConfiguration{MaxMessageSize: maxThriftBody}

// processThrift runs the generated processor on one already-read request
// body with the request's context (which carries the callInfo).
func (s *Server) processThrift(w http.ResponseWriter, r *http.Request, body []byte) {
	in := thrift.NewTMemoryBufferLen(len(body))
	_, _ = in.Write(body)
	out := thrift.NewTMemoryBufferLen(1024)
	_, err := s.proc.Process(r.Context(), thrift.NewTBinaryProtocolConf(in, thriftConf), thrift.NewTBinaryProtocolConf(out, thriftConf))
	if err != nil && out.Len() == 0 {
		writeAPIError(w, http.StatusBadRequest, "INVALID_PARAMETER_VALUE", "bad Thrift request: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/x-thrift")
	_, _ = w.Write(out.Bytes())
}
