package thrift

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/dbxtop/dbxtop/sources"
	"github.com/dbxtop/dbxtop/sources/thrift/gen/tcliservice"
)

// StatementID formats an operation GUID as drivers and the Databricks UI
// do: its 16 bytes in order as a lower-case 8-4-4-4-12 UUID, with no
// version or variant interpretation. Any other length prints as plain hex.
func StatementID(guid []byte) string {
	if len(guid) != 16 {
		return hex.EncodeToString(guid)
	}
	var b [36]byte
	hex.Encode(b[0:8], guid[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], guid[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], guid[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], guid[8:10])
	b[23] = '-'
	hex.Encode(b[24:36], guid[10:16])
	return string(b[:])
}

// GUIDFromStatementID parses a statement id (8-4-4-4-12 UUID text, or 32
// hex digits, any case) back into the 16 GUID bytes.
func GUIDFromStatementID(id string) ([]byte, error) {
	s := id
	if len(s) == 36 {
		if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
			return nil, fmt.Errorf("statement id %q: want 8-4-4-4-12 hex", id)
		}
		s = s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36]
	}
	if len(s) != 32 {
		return nil, fmt.Errorf("statement id %q: want a UUID (16 bytes)", id)
	}
	b, err := hex.DecodeString(strings.ToLower(s))
	if err != nil {
		return nil, fmt.Errorf("statement id %q: %w", id, err)
	}
	return b, nil
}

// zeroSecret stands in when a Ref carries no secret: Databricks looks
// operations up by GUID; servers that check the secret answer
// INVALID_HANDLE, which is the truth from our side.
var zeroSecret = make([]byte, 16)

// OperationHandle rebuilds a TOperationHandle from a Ref: the GUID from
// the statement id, the secret from the Ref (16 zero bytes when unknown),
// an EXECUTE_STATEMENT operation with a result set.
func OperationHandle(ref sources.Ref) (*tcliservice.TOperationHandle, error) {
	guid, err := GUIDFromStatementID(ref.StatementID)
	if err != nil {
		return nil, err
	}
	secret := ref.Secret
	if len(secret) == 0 {
		secret = zeroSecret
	}
	return &tcliservice.TOperationHandle{
		OperationId:   &tcliservice.THandleIdentifier{GUID: guid, Secret: append([]byte(nil), secret...)},
		OperationType: tcliservice.TOperationType_EXECUTE_STATEMENT,
		HasResultSet:  true,
	}, nil
}
