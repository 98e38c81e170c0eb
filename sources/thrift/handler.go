package thrift

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	athrift "github.com/apache/thrift/lib/go/thrift"

	"github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

// ContentType is the media type of TBinaryProtocol bodies over HTTP.
const ContentType = "application/x-thrift"

// MaxMessageSize bounds one Thrift message, request or response. Real
// answers of the calls dbxtop makes are small (status, a metadata page, a
// bounded FetchResults page); the bound keeps a hostile or broken peer from
// making us allocate gigabytes from one length prefix.
const MaxMessageSize = 64 << 20

// thriftConf is the TConfiguration for encoding.
var thriftConf = &athrift.TConfiguration{
	MaxMessageSize: MaxMessageSize,
	MaxFrameSize:   MaxMessageSize,
}

// readConf is the TConfiguration for decoding a message of n bytes that
// is wholly in memory. The binary protocol checks a container's claimed
// size (elements × minimum element size) against MaxMessageSize before it
// allocates; bounding that by the bytes actually present means a forged
// length prefix can never make us allocate more than a few times the body.
func readConf(n int) *athrift.TConfiguration {
	if n < 64 {
		n = 64
	}
	return &athrift.TConfiguration{MaxMessageSize: int32(n), MaxFrameSize: int32(n)}
}

// NewHandler serves TCLIService over HTTP POST with TBinaryProtocol, one
// RPC per request, as Databricks SQL warehouses do. The request context
// reaches h, so middleware in front of the handler can pass values (the
// caller's identity, the User-Agent, fault decisions) to the
// implementation. Thrift-level failures (unknown method, undecodable
// arguments, an error returned by h) are answered with 200 and a Thrift
// TApplicationException, like other servers; only a body that is not a
// Thrift message at all gets a 400.
func NewHandler(h tcliservice.TCLIService) http.Handler {
	return &handler{proc: tcliservice.NewTCLIServiceProcessor(h)}
}

type handler struct {
	proc *tcliservice.TCLIServiceProcessor
}

func (s *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "TCLIService accepts POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxMessageSize))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, fmt.Sprintf("thrift request larger than %d bytes", MaxMessageSize), http.StatusRequestEntityTooLarge)
			return
		}
		// The client went away mid-body: nobody to answer.
		return
	}
	iprot := NewReadProtocol(body)
	out := athrift.NewTMemoryBuffer()
	oprot := athrift.NewTBinaryProtocolConf(out, thriftConf)

	_, perr := s.proc.Process(r.Context(), iprot, oprot)
	if out.Len() == 0 {
		// Not even a message header could be read, so there is no
		// sequence id to answer an exception to.
		msg := "not a TBinaryProtocol message"
		if perr != nil {
			msg += ": " + perr.Error()
		}
		http.Error(w, msg, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("Content-Length", fmt.Sprint(out.Len()))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out.Bytes())
}
