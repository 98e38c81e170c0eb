// dbxtop's own subset of the HiveServer2 / Databricks SQL TCLIService IDL.
//
// Written from the wire facts in docs/thrift.md: every struct, field id and
// type below matches what Databricks SQL warehouses, Spark Thrift Server,
// Kyuubi and Hive (HTTP mode) put on the wire, so readers built from this
// file interoperate with them. Fields and structs we do not need are left
// out; Thrift readers skip unknown field ids, so omissions are safe.
//
// One dbxtop extension lives in TGetOperationStatusResp at field ids 3329+
// (0xD01), a range no real server uses: the simulator reports the owning
// client's last activity there.
//
// Regenerate: go generate ./sources/thrift/  (see sources/thrift/gen.go)

namespace go tcliservice

enum TProtocolVersion {
  __HIVE_JDBC_WORKAROUND = -7,
  __TEST_PROTOCOL_VERSION = 0xFF01,
  HIVE_CLI_SERVICE_PROTOCOL_V1 = 0,
  HIVE_CLI_SERVICE_PROTOCOL_V2 = 1,
  HIVE_CLI_SERVICE_PROTOCOL_V3 = 2,
  HIVE_CLI_SERVICE_PROTOCOL_V4 = 3,
  HIVE_CLI_SERVICE_PROTOCOL_V5 = 4,
  HIVE_CLI_SERVICE_PROTOCOL_V6 = 5,
  HIVE_CLI_SERVICE_PROTOCOL_V7 = 6,
  HIVE_CLI_SERVICE_PROTOCOL_V8 = 7,
  HIVE_CLI_SERVICE_PROTOCOL_V9 = 8,
  HIVE_CLI_SERVICE_PROTOCOL_V10 = 9,
  SPARK_CLI_SERVICE_PROTOCOL_V1 = 0xA501,
  SPARK_CLI_SERVICE_PROTOCOL_V2 = 0xA502,
  SPARK_CLI_SERVICE_PROTOCOL_V3 = 0xA503,
  SPARK_CLI_SERVICE_PROTOCOL_V4 = 0xA504,
  SPARK_CLI_SERVICE_PROTOCOL_V5 = 0xA505,
  SPARK_CLI_SERVICE_PROTOCOL_V6 = 0xA506,
  SPARK_CLI_SERVICE_PROTOCOL_V7 = 0xA507,
  SPARK_CLI_SERVICE_PROTOCOL_V8 = 0xA508,
  SPARK_CLI_SERVICE_PROTOCOL_V9 = 0xA509
}

enum TTypeId {
  BOOLEAN_TYPE = 0,
  TINYINT_TYPE = 1,
  SMALLINT_TYPE = 2,
  INT_TYPE = 3,
  BIGINT_TYPE = 4,
  FLOAT_TYPE = 5,
  DOUBLE_TYPE = 6,
  STRING_TYPE = 7,
  TIMESTAMP_TYPE = 8,
  BINARY_TYPE = 9,
  ARRAY_TYPE = 10,
  MAP_TYPE = 11,
  STRUCT_TYPE = 12,
  UNION_TYPE = 13,
  USER_DEFINED_TYPE = 14,
  DECIMAL_TYPE = 15,
  NULL_TYPE = 16,
  DATE_TYPE = 17,
  VARCHAR_TYPE = 18,
  CHAR_TYPE = 19,
  INTERVAL_YEAR_MONTH_TYPE = 20,
  INTERVAL_DAY_TIME_TYPE = 21
}

enum TSparkRowSetType {
  ARROW_BASED_SET = 0,
  COLUMN_BASED_SET = 1,
  ROW_BASED_SET = 2,
  URL_BASED_SET = 3
}

enum TStatusCode {
  SUCCESS_STATUS = 0,
  SUCCESS_WITH_INFO_STATUS = 1,
  STILL_EXECUTING_STATUS = 2,
  ERROR_STATUS = 3,
  INVALID_HANDLE_STATUS = 4
}

enum TOperationState {
  INITIALIZED_STATE = 0,
  RUNNING_STATE = 1,
  FINISHED_STATE = 2,
  CANCELED_STATE = 3,
  CLOSED_STATE = 4,
  ERROR_STATE = 5,
  UKNOWN_STATE = 6,
  PENDING_STATE = 7,
  TIMEDOUT_STATE = 8
}

enum TOperationType {
  EXECUTE_STATEMENT = 0,
  GET_TYPE_INFO = 1,
  GET_CATALOGS = 2,
  GET_SCHEMAS = 3,
  GET_TABLES = 4,
  GET_TABLE_TYPES = 5,
  GET_COLUMNS = 6,
  GET_FUNCTIONS = 7,
  UNKNOWN = 8
}

enum TFetchOrientation {
  FETCH_NEXT = 0,
  FETCH_PRIOR = 1,
  FETCH_RELATIVE = 2,
  FETCH_ABSOLUTE = 3,
  FETCH_FIRST = 4,
  FETCH_LAST = 5
}

// ---- types and schema ----------------------------------------------------

struct TPrimitiveTypeEntry {
  1: required TTypeId type
}

// Only primitive entries: array/map/struct/union/user-defined entries
// (ids 2..6) are skipped by the reader and leave the union empty.
union TTypeEntry {
  1: TPrimitiveTypeEntry primitiveEntry
}

struct TTypeDesc {
  1: required list<TTypeEntry> types
}

struct TColumnDesc {
  1: required string columnName
  2: required TTypeDesc typeDesc
  3: required i32 position
  4: optional string comment
}

struct TTableSchema {
  1: required list<TColumnDesc> columns
}

// ---- row-based values (kept because TRowSet.rows is required) ------------

struct TBoolValue { 1: optional bool value }
struct TByteValue { 1: optional i8 value }
struct TI16Value { 1: optional i16 value }
struct TI32Value { 1: optional i32 value }
struct TI64Value { 1: optional i64 value }
struct TDoubleValue { 1: optional double value }
struct TStringValue { 1: optional string value }

union TColumnValue {
  1: TBoolValue boolVal
  2: TByteValue byteVal
  3: TI16Value i16Val
  4: TI32Value i32Val
  5: TI64Value i64Val
  6: TDoubleValue doubleVal
  7: TStringValue stringVal
}

struct TRow {
  1: required list<TColumnValue> colVals
}

// ---- column-based values: nulls is a bitmap, bit i = row i, LSB first ----

struct TBoolColumn { 1: required list<bool> values; 2: required binary nulls }
struct TByteColumn { 1: required list<i8> values; 2: required binary nulls }
struct TI16Column { 1: required list<i16> values; 2: required binary nulls }
struct TI32Column { 1: required list<i32> values; 2: required binary nulls }
struct TI64Column { 1: required list<i64> values; 2: required binary nulls }
struct TDoubleColumn { 1: required list<double> values; 2: required binary nulls }
struct TStringColumn { 1: required list<string> values; 2: required binary nulls }
struct TBinaryColumn { 1: required list<binary> values; 2: required binary nulls }

union TColumn {
  1: TBoolColumn boolVal
  2: TByteColumn byteVal
  3: TI16Column i16Val
  4: TI32Column i32Val
  5: TI64Column i64Val
  6: TDoubleColumn doubleVal
  7: TStringColumn stringVal
  8: TBinaryColumn binaryVal
}

struct TSparkArrowBatch {
  1: required binary batch
  2: required i64 rowCount
}

struct TSparkArrowResultLink {
  1: required string fileLink
  2: required i64 expiryTime
  3: required i64 startRowOffset
  4: required i64 rowCount
  5: required i64 bytesNum
  6: optional map<string, string> httpHeaders
}

struct TRowSet {
  1: required i64 startRowOffset
  2: required list<TRow> rows
  3: optional list<TColumn> columns
  4: optional binary binaryColumns
  5: optional i32 columnCount
  0x501: optional list<TSparkArrowBatch> arrowBatches
  0x502: optional list<TSparkArrowResultLink> resultLinks
}

// ---- status and handles --------------------------------------------------

struct TStatus {
  1: required TStatusCode statusCode
  2: optional list<string> infoMessages
  3: optional string sqlState
  4: optional i32 errorCode
  5: optional string errorMessage
  6: optional string displayMessage
  0x501: optional string errorDetailsJson
}

struct TNamespace {
  1: optional string catalogName
  2: optional string schemaName
}

struct THandleIdentifier {
  1: required binary guid
  2: required binary secret
}

struct TSessionHandle {
  1: required THandleIdentifier sessionId
}

struct TOperationHandle {
  1: required THandleIdentifier operationId
  2: required TOperationType operationType
  3: required bool hasResultSet
  4: optional double modifiedRowCount
}

// ---- sessions --------------------------------------------------------------

struct TOpenSessionReq {
  1: optional TProtocolVersion client_protocol = TProtocolVersion.__HIVE_JDBC_WORKAROUND
  2: optional string username
  3: optional string password
  4: optional map<string, string> configuration
  0x502: optional i64 client_protocol_i64
  0x503: optional map<string, string> connectionProperties
  0x504: optional TNamespace initialNamespace
  0x505: optional bool canUseMultipleCatalogs
}

struct TOpenSessionResp {
  1: required TStatus status
  2: required TProtocolVersion serverProtocolVersion
  3: optional TSessionHandle sessionHandle
  4: optional map<string, string> configuration
  0x504: optional TNamespace initialNamespace
  0x505: optional bool canUseMultipleCatalogs
}

struct TCloseSessionReq {
  1: required TSessionHandle sessionHandle
}

struct TCloseSessionResp {
  1: required TStatus status
}

// ---- statements ------------------------------------------------------------

struct TSparkGetDirectResults {
  1: required i64 maxRows
  2: optional i64 maxBytes
}

struct TSparkArrowTypes {
  1: optional bool timestampAsArrow
  2: optional bool decimalAsArrow
  3: optional bool complexTypesAsArrow
  4: optional bool intervalTypesAsArrow
  5: optional bool nullTypeAsArrow
}

struct TExecuteStatementReq {
  1: required TSessionHandle sessionHandle
  2: required string statement
  3: optional map<string, string> confOverlay
  4: optional bool runAsync = false
  5: optional i64 queryTimeout = 0
  0x501: optional TSparkGetDirectResults getDirectResults
  0x502: optional bool canReadArrowResult
  0x503: optional bool canDownloadResult
  0x504: optional bool canDecompressLZ4Result
  0x505: optional i64 maxBytesPerFile
  0x506: optional TSparkArrowTypes useArrowNativeTypes
  0x507: optional i64 resultRowLimit
  0x509: optional i64 maxBytesPerBatch
}

struct TGetOperationStatusReq {
  1: required TOperationHandle operationHandle
  2: optional bool getProgressUpdate
}

struct TGetOperationStatusResp {
  1: required TStatus status
  2: optional TOperationState operationState
  3: optional string sqlState
  4: optional i32 errorCode
  5: optional string errorMessage
  6: optional string taskStatus
  7: optional i64 operationStarted
  8: optional i64 operationCompleted
  9: optional bool hasResultSet
  11: optional i64 numModifiedRows
  0x501: optional string displayMessage
  0x502: optional string diagnosticInfo
  0x503: optional string errorDetailsJson
  // dbxtop extension (0xD01+, unused by real servers): the owning client's
  // last call to the server, ms since the epoch; and whether the server
  // still holds the operation. Only the simulator sets them.
  0xD01: optional i64 dbxtopClientLastActivityMs
  0xD02: optional bool dbxtopOpen
}

struct TGetResultSetMetadataReq {
  1: required TOperationHandle operationHandle
}

struct TGetResultSetMetadataResp {
  1: required TStatus status
  2: optional TTableSchema schema
  0x501: optional TSparkRowSetType resultFormat
  0x502: optional bool lz4Compressed
  0x503: optional binary arrowSchema
  0x505: optional i64 uncompressedBytes
  0x506: optional i64 compressedBytes
  0x507: optional bool isStagingOperation
}

struct TFetchResultsReq {
  1: required TOperationHandle operationHandle
  2: required TFetchOrientation orientation = TFetchOrientation.FETCH_NEXT
  3: required i64 maxRows
  4: optional i16 fetchType = 0
  0x501: optional i64 maxBytes
  0x502: optional i64 startRowOffset
  0x503: optional bool includeResultSetMetadata
}

struct TFetchResultsResp {
  1: required TStatus status
  2: optional bool hasMoreRows
  3: optional TRowSet results
  0x501: optional TGetResultSetMetadataResp resultSetMetadata
}

struct TCloseOperationReq {
  1: required TOperationHandle operationHandle
}

struct TCloseOperationResp {
  1: required TStatus status
}

struct TCancelOperationReq {
  1: required TOperationHandle operationHandle
}

struct TCancelOperationResp {
  1: required TStatus status
}

struct TSparkDirectResults {
  1: optional TGetOperationStatusResp operationStatus
  2: optional TGetResultSetMetadataResp resultSetMetadata
  3: optional TFetchResultsResp resultSet
  4: optional TCloseOperationResp closeOperation
}

struct TExecuteStatementResp {
  1: required TStatus status
  2: optional TOperationHandle operationHandle
  0x501: optional TSparkDirectResults directResults
}

service TCLIService {
  TOpenSessionResp OpenSession(1: TOpenSessionReq req)
  TCloseSessionResp CloseSession(1: TCloseSessionReq req)
  TExecuteStatementResp ExecuteStatement(1: TExecuteStatementReq req)
  TGetOperationStatusResp GetOperationStatus(1: TGetOperationStatusReq req)
  TCancelOperationResp CancelOperation(1: TCancelOperationReq req)
  TCloseOperationResp CloseOperation(1: TCloseOperationReq req)
  TGetResultSetMetadataResp GetResultSetMetadata(1: TGetResultSetMetadataReq req)
  TFetchResultsResp FetchResults(1: TFetchResultsReq req)
}
