// The lock calls of the Hive Metastore, a subset of Apache Hive's hive_metastore.thrift
// (standalone-metastore/metastore-common/src/main/thrift/hive_metastore.thrift).
//
// Field ids, types, enum values, method names and exception ids are those of the real IDL, so a
// client built from this file talks to a real metastore (TBinaryProtocol, buffered socket). Only
// what the lock backend and its test double use is here; the real service extends
// fb303.FacebookService, which adds methods but changes nothing on the wire for these calls.

namespace java org.apache.hadoop.hive.metastore.api

enum LockLevel {
    DB = 1,
    TABLE = 2,
    PARTITION = 3,
}

enum LockState {
    ACQUIRED = 1,
    WAITING = 2,       // poll check_lock until ACQUIRED
    ABORT = 3,
    NOT_ACQUIRED = 4,  // only for no-wait requests
}

enum LockType {
    SHARED_READ = 1,
    SHARED_WRITE = 2,
    EXCLUSIVE = 3,
    EXCL_WRITE = 4,
}

enum DataOperationType {
    SELECT = 1,
    INSERT = 2,
    UPDATE = 3,
    DELETE = 4,
    UNSET = 5,
    NO_TXN = 6,
}

struct LockComponent {
    1: required LockType type,
    2: required LockLevel level,
    3: required string dbname,
    4: optional string tablename,
    5: optional string partitionname,
    6: optional DataOperationType operationType = DataOperationType.UNSET,
    7: optional bool isTransactional = false,
    8: optional bool isDynamicPartitionWrite = false
}

// Without a txnid the lock lives on its own and must be heartbeated by lockid.
struct LockRequest {
    1: required list<LockComponent> component,
    2: optional i64 txnid,
    3: required string user,
    4: required string hostname,
    5: optional string agentInfo = "Unknown",
    6: optional bool zeroWaitReadEnabled = false,
    7: optional bool exclusiveCTAS = false,
    8: optional bool locklessReadsEnabled = false
}

struct LockResponse {
    1: required i64 lockid,
    2: required LockState state,
    3: optional string errorMessage
}

struct CheckLockRequest {
    1: required i64 lockid,
    2: optional i64 txnid,
    3: optional i64 elapsed_ms,
}

struct UnlockRequest {
    1: required i64 lockid,
}

struct ShowLocksRequest {
    1: optional string dbname,
    2: optional string tablename,
    3: optional string partname,
    4: optional bool isExtended = false,
    5: optional i64 txnid,
}

// One element per component of a lock request; times are milliseconds on the metastore's clock.
struct ShowLocksResponseElement {
    1: required i64 lockid,
    2: required string dbname,
    3: optional string tablename,
    4: optional string partname,
    5: required LockState state,
    6: required LockType type,
    7: optional i64 txnid,
    8: required i64 lastheartbeat,
    9: optional i64 acquiredat,
    10: required string user,
    11: required string hostname,
    12: optional i32 heartbeatCount = 0,
    13: optional string agentInfo,
    14: optional i64 blockedByExtId,
    15: optional i64 blockedByIntId,
    16: optional i64 lockIdInternal,
}

struct ShowLocksResponse {
    1: list<ShowLocksResponseElement> locks,
}

struct HeartbeatRequest {
    1: optional i64 lockid,
    2: optional i64 txnid
}

exception MetaException {
    1: string message
}

exception NoSuchTxnException {
    1: string message
}

exception TxnAbortedException {
    1: string message
}

exception TxnOpenException {
    1: string message
}

exception NoSuchLockException {
    1: string message
}

service ThriftHiveMetastore {
    LockResponse lock(1: LockRequest rqst)
        throws (1: NoSuchTxnException o1, 2: TxnAbortedException o2)
    LockResponse check_lock(1: CheckLockRequest rqst)
        throws (1: NoSuchTxnException o1, 2: TxnAbortedException o2, 3: NoSuchLockException o3)
    void unlock(1: UnlockRequest rqst)
        throws (1: NoSuchLockException o1, 2: TxnOpenException o2)
    ShowLocksResponse show_locks(1: ShowLocksRequest rqst)
    void heartbeat(1: HeartbeatRequest ids)
        throws (1: NoSuchLockException o1, 2: NoSuchTxnException o2, 3: TxnAbortedException o3)
}
