package sim

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// apiError is the Databricks REST error body.
type apiError struct {
	ErrorCode string        `json:"error_code"`
	Message   string        `json:"message"`
	Details   []errorDetail `json:"details"`
}

type errorDetail struct {
	Type      string `json:"@type"`
	RequestID string `json:"request_id,omitempty"`
	// RetryInfo
	RetryDelay string `json:"retry_delay,omitempty"`
}

const requestInfoType = "type.googleapis.com/google.rpc.RequestInfo"

// writeAPIError answers with a Databricks error body carrying a fresh
// request id (also in x-request-id, as the real gateway does).
func writeAPIError(w http.ResponseWriter, status int, code, msg string) string {
	rid := uuidString(newGUID())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-request-id", rid)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(apiError{ErrorCode: code, Message: msg,
		Details: []errorDetail{{Type: requestInfoType, RequestID: rid}}})
	return rid
}

// writeGateway answers like a load balancer in front of the workspace: an
// HTML page, no Databricks body.
func writeGateway(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(status)
	t := http.StatusText(status)
	_, _ = w.Write([]byte("<html>\r\n<head><title>" + strconv.Itoa(status) + " " + t +
		"</title></head>\r\n<body>\r\n<center><h1>" + strconv.Itoa(status) + " " + t +
		"</h1></center>\r\n</body>\r\n</html>\r\n"))
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
