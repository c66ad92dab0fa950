//! IREE's status codes and the error that carries one: what the HAL's operations and the VM's
//! native functions return. It sits below both, so that neither layer reaches into the other
//! for its error type.

use std::fmt;

/// IREE's status codes, as `fail` and the runtime report them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StatusCode {
    /// 0: success.
    Ok,
    /// 1.
    Cancelled,
    /// 2.
    Unknown,
    /// 3.
    InvalidArgument,
    /// 4.
    DeadlineExceeded,
    /// 5.
    NotFound,
    /// 6.
    AlreadyExists,
    /// 7.
    PermissionDenied,
    /// 8.
    ResourceExhausted,
    /// 9.
    FailedPrecondition,
    /// 10.
    Aborted,
    /// 11.
    OutOfRange,
    /// 12.
    Unimplemented,
    /// 13.
    Internal,
    /// 14.
    Unavailable,
    /// 15.
    DataLoss,
    /// 16.
    Unauthenticated,
    /// 17.
    Deferred,
    /// 18.
    Incompatible,
    /// Any other value (the code masked with `0x1F`).
    Other(u32),
}

impl StatusCode {
    /// The status for a raw code (IREE keeps the low 5 bits).
    pub fn from_code(code: u32) -> StatusCode {
        use StatusCode::*;
        match code & 0x1F {
            0 => Ok,
            1 => Cancelled,
            2 => Unknown,
            3 => InvalidArgument,
            4 => DeadlineExceeded,
            5 => NotFound,
            6 => AlreadyExists,
            7 => PermissionDenied,
            8 => ResourceExhausted,
            9 => FailedPrecondition,
            10 => Aborted,
            11 => OutOfRange,
            12 => Unimplemented,
            13 => Internal,
            14 => Unavailable,
            15 => DataLoss,
            16 => Unauthenticated,
            17 => Deferred,
            18 => Incompatible,
            other => Other(other),
        }
    }

    /// The raw code (`3` for `INVALID_ARGUMENT`), as the VM passes statuses in `i32`s.
    pub fn code(self) -> u32 {
        use StatusCode::*;
        match self {
            Ok => 0,
            Cancelled => 1,
            Unknown => 2,
            InvalidArgument => 3,
            DeadlineExceeded => 4,
            NotFound => 5,
            AlreadyExists => 6,
            PermissionDenied => 7,
            ResourceExhausted => 8,
            FailedPrecondition => 9,
            Aborted => 10,
            OutOfRange => 11,
            Unimplemented => 12,
            Internal => 13,
            Unavailable => 14,
            DataLoss => 15,
            Unauthenticated => 16,
            Deferred => 17,
            Incompatible => 18,
            Other(code) => code,
        }
    }

    /// IREE's name for the status (`INVALID_ARGUMENT`).
    pub fn name(self) -> &'static str {
        use StatusCode::*;
        match self {
            Ok => "OK",
            Cancelled => "CANCELLED",
            Unknown => "UNKNOWN",
            InvalidArgument => "INVALID_ARGUMENT",
            DeadlineExceeded => "DEADLINE_EXCEEDED",
            NotFound => "NOT_FOUND",
            AlreadyExists => "ALREADY_EXISTS",
            PermissionDenied => "PERMISSION_DENIED",
            ResourceExhausted => "RESOURCE_EXHAUSTED",
            FailedPrecondition => "FAILED_PRECONDITION",
            Aborted => "ABORTED",
            OutOfRange => "OUT_OF_RANGE",
            Unimplemented => "UNIMPLEMENTED",
            Internal => "INTERNAL",
            Unavailable => "UNAVAILABLE",
            DataLoss => "DATA_LOSS",
            Unauthenticated => "UNAUTHENTICATED",
            Deferred => "DEFERRED",
            Incompatible => "INCOMPATIBLE",
            Other(_) => "UNKNOWN_STATUS",
        }
    }
}

impl fmt::Display for StatusCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatusCode::Other(code) => write!(f, "status {code}"),
            other => f.write_str(other.name()),
        }
    }
}

/// An error with an IREE status and a message: what a HAL operation or a native function
/// returns when it fails.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusError {
    /// The status.
    pub status: StatusCode,
    /// What went wrong.
    pub message: String,
}

impl StatusError {
    /// An error with `status` and `message`.
    pub fn new(status: StatusCode, message: impl Into<String>) -> StatusError {
        StatusError {
            status,
            message: message.into(),
        }
    }

    /// An error with status `INVALID_ARGUMENT`.
    pub fn invalid_argument(message: impl Into<String>) -> StatusError {
        StatusError::new(StatusCode::InvalidArgument, message)
    }

    /// An error with status `OUT_OF_RANGE`.
    pub fn out_of_range(message: impl Into<String>) -> StatusError {
        StatusError::new(StatusCode::OutOfRange, message)
    }
}

impl fmt::Display for StatusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status, self.message)
    }
}

impl std::error::Error for StatusError {}
